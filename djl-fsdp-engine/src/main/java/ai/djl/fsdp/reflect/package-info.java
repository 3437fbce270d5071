/**
 * Reflection into DJL's own classes where DJL offers no public way, each class with the field it
 * reads and why: a block's children ({@link ai.djl.fsdp.reflect.BlockChildren}), a parameter's
 * array ({@link ai.djl.fsdp.reflect.ParameterArrays}), an optimizer's state ({@link
 * ai.djl.fsdp.reflect.OptimizerStates}) and a batch norm's settings ({@link
 * ai.djl.fsdp.reflect.BatchNormSettings}). Nothing else in the project reflects into DJL.
 */
package ai.djl.fsdp.reflect;
