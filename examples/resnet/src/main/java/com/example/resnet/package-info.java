/**
 * A stand-alone Maven project that uses djl-fsdp as a user would, through the {@code
 * djl-fsdp-trainer} artifact: {@link com.example.resnet.TrainResNet} trains DJL's ResNet-20 (with
 * BatchNorm) on seeded synthetic images as a plain DJL program, and its lines marked FSDP make it
 * train sharded over the ranks that {@code bin/fsdp launch}, torchrun or Slurm start.
 */
package com.example.resnet;
