package ai.djl.fsdp.safetensors;

import ai.djl.ndarray.types.Shape;

/**
 * One tensor's entry in a safetensors header.
 *
 * @param name the tensor's name
 * @param dtype the element type
 * @param shape the shape
 * @param begin the first byte of the data, relative to the start of the data section
 * @param end one past the last byte of the data, relative to the start of the data section
 */
public record TensorInfo(String name, Dtype dtype, Shape shape, long begin, long end) {

    /**
     * Returns the number of elements.
     *
     * @return the number of elements
     */
    public long elements() {
        return shape.size();
    }
}
