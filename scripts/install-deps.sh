#!/bin/sh
# Installs every system dependency of prepack from Debian 12 packages.
# Idempotent: safe to run again. Needs root (or sudo).
set -eu
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  build-essential cmake pkg-config git ca-certificates ccache \
  libgtest-dev libgmock-dev \
  libabsl-dev \
  libpcre2-dev \
  libdnnl-dev \
  libcli11-dev nlohmann-json3-dev \
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev grpc-proto \
  libcpp-httplib-dev libssl-dev prometheus-cpp-dev \
  golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev \
  protoc-gen-go protoc-gen-go-grpc \
  openssl \
  swig default-jdk-headless junit4 junit5 \
  mono-mcs mono-runtime nunit-console libnunit-cil-dev \
  python3 python3-venv \
  valgrind qemu-user \
  clang libclang-rt-14-dev libomp-dev \
  json-schema-test-suite
# libpcre2-dev: the regexes of the BPE pre-tokenizers (core/model/pretokenizer.cpp).
# libssl-dev: OpenSSL's SHA-256 for `prepack batch plan`'s manifest, and TLS.
# libcpp-httplib-dev: prepackd's OpenAI-compatible HTTP API (service/http/; it
# brings libssl-dev, zlib1g-dev and libbrotli-dev). python3-venv: the HTTP
# API's pytest makes a venv with the openai client (service/tests/http/).
# prometheus-cpp-dev: prepackd's GET /metrics (service/metrics.cpp; its core
# library only, which keeps the series and writes Prometheus' text format).
# valgrind: the installed library is run under memcheck (tests/capi/check_install.sh);
# qemu-user: the CLI run as an AVX2-only and a baseline (x86-64-v2) CPU would
# run it (tests/cpu_level_qemu.sh).
# clang + libclang-rt-14-dev: libFuzzer and clang's sanitizer runtimes for
# scripts/fuzz.sh; libomp-dev: OpenMP for code compiled by clang.
# json-schema-test-suite: the suite's labelled instances check the JSON Schema
# front end (tests/grammar_schema_suite_test.py; data only, ~1 MB).
# Never add golang-goprotobuf-dev: it conflicts with protoc-gen-go.
# CUDA is not a Debian package. When /usr/local/cuda (nvcc) exists the build
# compiles the CUDA backend too; otherwise it is skipped automatically.
