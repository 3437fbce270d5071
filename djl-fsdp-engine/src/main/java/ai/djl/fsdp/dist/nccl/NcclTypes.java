package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.ndarray.types.DataType;
import org.bytedeco.cuda.global.nccl;

/** DJL's element types and the project's reductions as NCCL's codes. */
final class NcclTypes {

    private NcclTypes() {}

    /**
     * Maps a reduction to NCCL's.
     *
     * @param op the reduction
     * @return NCCL's code for it
     * @throws IllegalArgumentException for a reduction NCCL lacks
     */
    static int reduction(ReduceOp op) {
        switch (op) {
            case SUM:
                return nccl.ncclSum;
            case AVG:
                return nccl.ncclAvg;
            default:
                throw new IllegalArgumentException("Unsupported reduction " + op);
        }
    }

    /**
     * Maps an element type to NCCL's.
     *
     * @param type the arrays' element type
     * @return NCCL's code for it
     * @throws IllegalArgumentException for a type NCCL collectives do not support
     */
    static int elementType(DataType type) {
        switch (type) {
            case FLOAT32:
                return nccl.ncclFloat32;
            case FLOAT16:
                return nccl.ncclFloat16;
            case FLOAT64:
                return nccl.ncclFloat64;
            case INT32:
                return nccl.ncclInt32;
            case INT64:
                return nccl.ncclInt64;
            case INT8:
                return nccl.ncclInt8;
            case UINT8:
                return nccl.ncclUint8;
            case BFLOAT16:
                return nccl.ncclBfloat16;
            default:
                break;
        }
        throw new IllegalArgumentException("NCCL collectives do not support " + type + " arrays");
    }
}
