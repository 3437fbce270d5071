/**
 * The smallest complete FSDP program: {@link ai.djl.fsdp.examples.FsdpFitExample}, an ordinary DJL
 * classifier trained with {@code EasyTrain.fit} and switched to FSDP by three marked lines, and
 * {@link ai.djl.fsdp.examples.PlainFitExample}, the same program without them, which checks that
 * DJL itself runs on a given libtorch. {@code docs/fsdp.md} walks through the first; the GPU kit
 * runs both.
 */
package ai.djl.fsdp.examples;
