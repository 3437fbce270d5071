#!/usr/bin/env python3
"""Replaces DJL's legacy-profiler code in a copy of ai_djl_pytorch_jni_PyTorchLibrary_system.cc
(DJL v0.35.0) by two entry points that throw, for libtorch releases whose legacy profiler API no
longer compiles. The project never starts DJL's profiler. Edits the file given in place; fails
loudly if the file is not the one it was written for."""
import sys

START = "// the code snippet is copied from torch/csrc/autograd/profiler_legacy.cpp"
END = "JNIEXPORT void JNICALL Java_ai_djl_pytorch_jni_PyTorchLibrary_torchCudaEmptyCache"
USING = "using namespace torch::autograd::profiler;"
STUB = """// djl-fsdp build (tools/gpu-kit/jni-profiler-stub.py): DJL's legacy profiler is left out.
JNIEXPORT void JNICALL Java_ai_djl_pytorch_jni_PyTorchLibrary_torchStartProfile(
    JNIEnv* env, jobject jthis, jboolean juse_cuda, jboolean jrecord_shape, jboolean jprofile_memory) {
  env->ThrowNew(ENGINE_EXCEPTION_CLASS, "DJL's profiler is not built into this libdjl_torch (djl-fsdp's build for a newer libtorch)");
}

JNIEXPORT void JNICALL Java_ai_djl_pytorch_jni_PyTorchLibrary_torchStopProfile(
    JNIEnv* env, jobject jthis, jstring joutput_file) {
  env->ThrowNew(ENGINE_EXCEPTION_CLASS, "DJL's profiler is not built into this libdjl_torch (djl-fsdp's build for a newer libtorch)");
}

"""

path = sys.argv[1]
text = open(path).read()
start, end = text.find(START), text.find(END)
if start < 0 or end < start or text.count(USING) != 1:
    sys.exit(f"jni-profiler-stub.py: {path} is not DJL v0.35.0's system.cc: nothing replaced")
text = text[:start] + STUB + text[end:]
open(path, "w").write(text.replace(USING, ""))
