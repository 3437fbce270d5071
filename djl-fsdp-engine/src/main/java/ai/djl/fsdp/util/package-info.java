/**
 * Small helpers every module shares and that belong to no one job of the engine: {@link
 * ai.djl.fsdp.util.Failures} runs steps that must all run, such as closing several resources, and
 * keeps the first failure.
 */
package ai.djl.fsdp.util;
