# cmake/check_layers.cmake — refuses an #include that goes up the layer stack.
#
#   cmake -DROOT=<source tree> [-DSTAMP=<file touched on success>] -P cmake/check_layers.cmake
#
# The layers, lowest first; a file may include headers of its own layer and of any lower one.
# tuner and runtime share a rank but may not include each other (both build on cache).
#   base (0) → generator (1) → jit (2) → cache (3) → tuner | runtime (4) → report (5) → cli (6)
# Where a file lives says its layer: <layer>/x.cpp and <layer>/x.h belong to <layer>. The public
# headers all live in include/flashtune/, so each of those takes the layer of the directory that
# holds its implementation (include/flashtune/x.h ↔ <layer>/x.cpp), or the entry in
# FT_HEADER_LAYERS below when there is no such file. A public header with neither is refused:
# every header must have a place. tests/, bench/ and examples/ are users, never checked.
#
# CMakeLists.txt runs this at configure time and again at build time whenever a source changes;
# tests/cmake/layers_test.cpp runs it on planted trees.
cmake_minimum_required(VERSION 3.25)

if(NOT ROOT)
  message(FATAL_ERROR "check_layers.cmake: pass -DROOT=<source tree>")
endif()

set(FT_LAYERS base generator jit cache tuner runtime report cli)
set(FT_RANK_base 0)
set(FT_RANK_generator 1)
set(FT_RANK_jit 2)
set(FT_RANK_cache 3)
set(FT_RANK_tuner 4)
set(FT_RANK_runtime 4)
set(FT_RANK_report 5)
set(FT_RANK_cli 6)
# Public headers whose implementation file has another name (header=layer).
set(FT_HEADER_LAYERS export.h=base flashtune.h=runtime report.h=report)

# The layer of each public header.
file(GLOB public_headers RELATIVE ${ROOT}/include/flashtune ${ROOT}/include/flashtune/*.h)
set(errors "")
foreach(h IN LISTS public_headers)
  string(REGEX REPLACE "\\.h$" "" stem ${h})
  set(layer "")
  foreach(entry IN LISTS FT_HEADER_LAYERS)
    if(entry MATCHES "^${h}=(.*)$")
      set(layer ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(NOT layer)
    foreach(l IN LISTS FT_LAYERS)
      if(EXISTS ${ROOT}/${l}/${stem}.cpp)
        if(layer)
          string(APPEND errors "  include/flashtune/${h}: both ${layer}/${stem}.cpp and ${l}/${stem}.cpp exist; "
                               "name its layer in FT_HEADER_LAYERS (cmake/check_layers.cmake)\n")
        endif()
        set(layer ${l})
      endif()
    endforeach()
  endif()
  if(NOT layer)
    string(APPEND errors "  include/flashtune/${h}: no layer: no <layer>/${stem}.cpp implements it; "
                         "add it to FT_HEADER_LAYERS in cmake/check_layers.cmake\n")
    continue()
  endif()
  set(FT_HEADER_${h} ${layer})
endforeach()

# The layer of what `include` names ("" for system and third-party headers).
function(ft_included_layer include out)
  set(layer "")
  if(include MATCHES "^flashtune/([^/]+)$")
    set(layer "${FT_HEADER_${CMAKE_MATCH_1}}")
  elseif(include MATCHES "^([a-z_]+)/")
    if(CMAKE_MATCH_1 IN_LIST FT_LAYERS)
      set(layer ${CMAKE_MATCH_1})
    endif()
  endif()
  set(${out} "${layer}" PARENT_SCOPE)
endfunction()

function(ft_check_file file layer)
  file(STRINGS ${ROOT}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "#[ \t]*include[ \t]*[\"<]([^\">]+)[\">]")
      continue()
    endif()
    set(included ${CMAKE_MATCH_1})
    ft_included_layer(${included} to)
    if(NOT to OR to STREQUAL layer)
      continue()
    endif()
    if(FT_RANK_${to} GREATER_EQUAL FT_RANK_${layer})
      string(APPEND errors "  ${file} (layer ${layer}) includes ${included} (layer ${to})\n")
    endif()
  endforeach()
  set(errors "${errors}" PARENT_SCOPE)
endfunction()

foreach(h IN LISTS public_headers)
  if(FT_HEADER_${h})
    ft_check_file(include/flashtune/${h} ${FT_HEADER_${h}})
  endif()
endforeach()
foreach(l IN LISTS FT_LAYERS)
  file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/${l}/*.h ${ROOT}/${l}/*.cpp)
  list(FILTER files EXCLUDE REGEX "_test\\.cpp$")
  foreach(f IN LISTS files)
    ft_check_file(${f} ${l})
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR
    "flashtune layer check failed: an #include goes up (or sideways between tuner and runtime).\n"
    "Layers, lowest first: base → generator → jit → cache → tuner | runtime → report → cli; a file "
    "may include only its own layer and lower ones (docs/architecture.md).\n${errors}")
endif()
if(STAMP)
  file(TOUCH ${STAMP})
endif()
