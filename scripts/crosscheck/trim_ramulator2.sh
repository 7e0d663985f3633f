#!/bin/bash
# Shorten the Ramulator 2.0 (v2.0a) build for the cross-check on a loaded
# host: drop from its CMake source lists the implementation files that no
# config of the cross-check uses (other DRAM standards, the BH/PRAC/BLISS
# controllers and schedulers, RowHammer plugins, the O3/gem5 front ends,
# the test target). The files the pcm_hoop and DDR4 runs use are untouched;
# Ramulator implementations register themselves by name, so nothing else
# refers to the dropped ones. 68 -> 17 compiled files (+ yaml-cpp, spdlog).
#
#   PEERS=peers-work ./build.sh ramulator2     # extracts; stop it once it compiles
#   scripts/crosscheck/trim_ramulator2.sh $PEERS/src/ramulator2
#   cd $PEERS/src/ramulator2/build && cmake .. <build.sh's flags> && make
#
# Keeps DDR4.cpp so the recipe's ramulator2_ddr4.yaml still runs (the build
# measured here on 2026-11-25 also dropped DDR4.cpp: 16 files).
set -eu
src=${1:?usage: trim_ramulator2.sh RAMULATOR2_SOURCE_DIR}/src
cd "$src"
sed -i -E '/impl\/(rit|DDR4-VRR|DDR4-RVRR|DDR5|DDR5-VRR|DDR5-RVRR|LPDDR5|HBM|HBM2|HBM3|GDDR6)\.cpp\s*$/d' \
    dram/CMakeLists.txt addr_mapper/CMakeLists.txt
sed -i -E '/impl\/(bh_dram_controller|dummy_controller|prac_dram_controller|scheduler\/bh_scheduler|scheduler\/blocking_scheduler|scheduler\/bliss_scheduler|scheduler\/prac_scheduler|plugin\/[a-z_]+)\.cpp\s*$/d; /impl\/plugin\/[a-z_]+\/[a-z_]+\.(cpp|h)\s*$/d' \
    dram_controller/CMakeLists.txt
sed -i -E 's#^(\s*)impl/processor/.*$##; /impl\/memory_trace\/readwrite_trace.cpp/d; /impl\/external_wrapper\/gem5_frontend.cpp/d' \
    frontend/CMakeLists.txt
sed -i -E '/impl\/(bh_DRAM_system|dummy_memory_system)\.cpp/d' memory_system/CMakeLists.txt
sed -i -E '/impl\/random_translation.cpp/d' translation/CMakeLists.txt
sed -i -E 's/^(add_subdirectory\(test\))/# \1/' CMakeLists.txt
# What is still compiled: the subdirectories CMake adds, and main.cpp.
for d in $(tr -d "\r" < CMakeLists.txt | sed -n -E "s/^add_subdirectory\\((.*)\\)/\\1/p"); do
  grep -ho '[A-Za-z_/0-9-]*\.cpp' "$d/CMakeLists.txt" | sed "s#^#kept: $d/#"
done
echo "kept: main.cpp"
