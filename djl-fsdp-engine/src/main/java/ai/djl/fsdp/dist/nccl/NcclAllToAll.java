package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.tensor.memory.DevicePointer;
import ai.djl.ndarray.types.DataType;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;

/**
 * An all-to-all as NCCL composes one: a send and a receive of one piece with every rank, queued
 * between {@code ncclGroupStart} and {@code ncclGroupEnd} so that NCCL runs them together and no
 * pair waits on another (NCCL has no all-to-all call of its own).
 */
final class NcclAllToAll {

    private NcclAllToAll() {}

    /**
     * Queues the sends and receives on {@code stream}.
     *
     * @param comm the communicator
     * @param addresses the device addresses of the input's {@code size} pieces (piece r for rank r)
     *     and of the output's (piece s from rank s)
     * @param count the elements of a piece
     * @param type the element type
     * @param size the ranks of the communicator
     * @param stream the stream the transfers run on
     * @param jobRank this rank in the job, for errors
     */
    static void queue(
            ncclComm comm,
            long[] addresses,
            long count,
            DataType type,
            int size,
            CUstream_st stream,
            int jobRank) {
        int ncclType = NcclTypes.elementType(type);
        long pieceBytes = count * type.getNumOfBytes();
        NcclStatus.checkNccl(nccl.ncclGroupStart(), "ncclGroupStart", jobRank);
        try {
            for (int peer = 0; peer < size; peer++) {
                DevicePointer send = new DevicePointer(addresses[0] + peer * pieceBytes);
                DevicePointer receive = new DevicePointer(addresses[1] + peer * pieceBytes);
                NcclStatus.checkNccl(
                        nccl.ncclSend(send, count, ncclType, peer, comm, stream),
                        "ncclSend",
                        jobRank);
                NcclStatus.checkNccl(
                        nccl.ncclRecv(receive, count, ncclType, peer, comm, stream),
                        "ncclRecv",
                        jobRank);
            }
        } finally {
            // A group that was started is ended even when a call in it failed.
            NcclStatus.checkNccl(nccl.ncclGroupEnd(), "ncclGroupEnd", jobRank);
        }
    }
}
