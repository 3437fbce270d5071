/**
 * The unit plan: which blocks become FSDP units ({@link ai.djl.fsdp.wrap.WrapPlanner}, asking the
 * trainer's {@code WrapPolicy} as a predicate; block classes named as policies name them, {@link
 * ai.djl.fsdp.wrap.LayerClasses}) and which parameters each unit owns ({@link
 * ai.djl.fsdp.wrap.UnitPlan}), every block and unit named by its dotted path. Pure: no arrays, no
 * collectives.
 */
package ai.djl.fsdp.wrap;
