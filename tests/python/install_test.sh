#!/usr/bin/env bash
# The Python package as a user gets it: builds the wheel from this source tree (pip wheel, whose
# build backend scikit-build-core comes from PyPI), installs it into a fresh virtual environment
# with nothing else in it but the build backend (no torch), and runs tests/python/package_test.py there.
#
# usage: install_test.sh PYTHON3 SOURCE_DIR BUILD_DIR WORK_DIR VERSION
# The wheel build reuses BUILD_DIR (the tree ctest runs from, already built), so it compiles
# nothing: configuring again and installing the CMake component `python` takes seconds. For that
# the backend runs without build isolation from the venv (scikit-build-core clears a build tree's
# CMake cache when it comes from another isolated environment), and the tree's compiler and
# options are passed as they are (so even a cleared cache would configure the same tree).
# Cost: scikit-build-core configures with CMAKE_INSTALL_PREFIX set to its temporary wheel folder,
# which the tuner bakes in (FLASHTUNE_INSTALLED_CLI), so each run recompiles the tuner layer and
# relinks the library and the CLI (242 s on the loaded 2-core development machine; the rest is
# seconds), and leaves that prefix in BUILD_DIR's cache: install from it with --prefix.
# Exit 77 (skipped) when this Python has no venv module or pip cannot fetch the build backend.
set -uo pipefail
PY=$1 SRC=$2 BUILD=$3 WORK=$4 VERSION=$5
rm -rf "$WORK" && mkdir -p "$WORK"
start=$(date +%s)
if ! "$PY" -m venv "$WORK/venv" > "$WORK/venv.log" 2>&1; then
  cat "$WORK/venv.log"
  echo "SKIP: $PY cannot create a virtual environment (Debian: apt-get install python3-venv)"
  exit 77
fi
VPY=$WORK/venv/bin/python
if ! "$VPY" -m pip install -q "scikit-build-core>=0.10" > "$WORK/backend.log" 2>&1; then
  cat "$WORK/backend.log"
  echo "SKIP: pip could not fetch the build backend scikit-build-core (no network to PyPI?)"
  exit 77
fi
cached() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
defines=("--config-settings=cmake.build-type=$(cached CMAKE_BUILD_TYPE)")
for option in FLASHTUNE_BUILD_TESTS FLASHTUNE_BUILD_BENCHMARKS; do
  defines+=("--config-settings=cmake.define.$option=$(cached $option)")
done
if ! CXX=$(cached CMAKE_CXX_COMPILER) "$VPY" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$WORK/dist" \
    --config-settings=build-dir="$BUILD" "${defines[@]}" "$SRC" > "$WORK/wheel.log" 2>&1; then
  cat "$WORK/wheel.log"
  echo "FAIL: pip wheel"
  exit 1
fi
wheel=$(ls "$WORK"/dist/flashtune-*.whl)
echo "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $(( $(date +%s) - start )) s"
"$VPY" -m pip install --no-deps --no-index "$wheel" > "$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; exit 1; }
site=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# Outside the source tree, with no override pointing back into it.
# The build tree's recording fake GPU, when built, carries one call from Python to a launch.
fake=$BUILD/tests/libft_fake_gpu_libcuda.so
[ -f "$fake" ] || fake=
cd "$WORK" && env -u FLASHTUNE_LIB -u FLASHTUNE_CLI -u PYTHONPATH FLASHTUNE_TEST_SITE="$site" \
  FLASHTUNE_TEST_VERSION="$VERSION" FLASHTUNE_TEST_FAKE_GPU="$fake" "$VPY" "$SRC/tests/python/package_test.py" -v
rc=$?
echo "wheel built, installed and tested in $(( $(date +%s) - start )) s"
exit $rc
