#!/usr/bin/env bash
# Writes the JNI headers build-jni.sh compiles DJL's sources with into OUTPUT_DIR (default: the
# kit's jni-include/), so that a machine with a bare Java runtime (or none) can build the JNI: the
# JDK's jni.h and jni_md.h, and DJL's ai_djl_pytorch_jni_PyTorchLibrary.h, generated with
# `javac -h` from PyTorchLibrary in ai.djl.pytorch:pytorch-engine:0.35.0's sources jar.
# Needs a JDK and the sources jar in the Maven repository (M2_REPO, default ~/.m2/repository),
# which it fetches with mvn where it is missing.
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
out="${1:-$here/jni-include}"
m2="${M2_REPO:-$HOME/.m2/repository}"
djl=0.35.0
sources_jar="$m2/ai/djl/pytorch/pytorch-engine/$djl/pytorch-engine-$djl-sources.jar"
api_jar="$m2/ai/djl/api/$djl/api-$djl.jar"

fail() { echo "jni-headers.sh: $*" >&2; exit 1; }
command -v javac >/dev/null || fail "javac is missing: a JDK 17 is needed"
java_home="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"
[[ -f "$java_home/include/jni.h" ]] || fail "$java_home/include/jni.h is missing: set JAVA_HOME to a JDK"
[[ -f "$api_jar" ]] || fail "$api_jar is missing: build the project once (mvn -B -DskipTests package)"
artifact="ai.djl.pytorch:pytorch-engine:$djl:jar:sources"
if [[ ! -f "$sources_jar" ]] && command -v mvn >/dev/null; then
    mvn -B -q dependency:get -Dartifact="$artifact" -Dtransitive=false ${M2_REPO:+-Dmaven.repo.local="$m2"} >&2 || true
fi
[[ -f "$sources_jar" ]] || fail "$sources_jar is missing; fetch it with: mvn dependency:get \
-Dartifact=$artifact -Dtransitive=false"

work="$(mktemp -d "${TMPDIR:-/tmp}/jni-headers.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$work" && mkdir src classes && cd src && jar xf "$sources_jar" ai/djl/pytorch/jni)
javac -h "$work/include" -d "$work/classes" -cp "$api_jar" -sourcepath "$work/src" \
    "$work/src/ai/djl/pytorch/jni/PyTorchLibrary.java" 2> "$work/javac.log" \
    || { cat "$work/javac.log" >&2; fail "javac -h failed"; }
mkdir -p "$out"
cp "$java_home/include/jni.h" "$java_home/include/linux/jni_md.h" \
    "$work/include/ai_djl_pytorch_jni_PyTorchLibrary.h" "$out/"
echo "jni-headers.sh: $out ($(grep -c 'JNIEXPORT' "$out/ai_djl_pytorch_jni_PyTorchLibrary.h") DJL entry points declared)"
