# Program-running tests of weft/io (docs/checkpoints.md), included by tests/CMakeLists.txt.
# Cross-checks against the reference implementations (Python); they keep the train.* names and
# label they had when they lived in tests/train:
#   train.safetensors_crosscheck      weft's safetensors reader/writer against the PyPI
#                                     `safetensors` package
#   train.gpt2_checkpoint_crosscheck  weft's gpt checkpoints against transformers' GPT-2 names,
#                                     Conv1D layouts and forward pass
#   train.hf_llama_crosscheck         load_hf_weights/save_hf_weights against transformers'
#                                     LLaMA-family names, shards and forward pass
#   train.hf_neox_crosscheck          the gpt_neox overloads against transformers' GPT-NeoX names,
#                                     query_key_value's per-head rows and forward pass (Pythia)
#   train.hf_moe_crosscheck           the moe_llama overloads against transformers' Mixtral and
#                                     Qwen3-MoE per-expert names, routing and forward pass
#   train.hf_gemma3_crosscheck        the gemma3 overloads against transformers' Gemma 3 text names,
#                                     config fields and forward pass (local/global layers, (1 + w) norms)
# All exit 77 (skip) without numpy/safetensors.
add_executable(safetensors_write_sample ${CMAKE_CURRENT_LIST_DIR}/safetensors_write_sample.cpp)
target_link_libraries(safetensors_write_sample PRIVATE weft::weft)
add_executable(gpt2_checkpoint_sample ${CMAKE_CURRENT_LIST_DIR}/gpt2_checkpoint_sample.cpp)
target_link_libraries(gpt2_checkpoint_sample PRIVATE weft::host)
add_executable(hf_llama_sample ${CMAKE_CURRENT_LIST_DIR}/hf_llama_sample.cpp)
target_link_libraries(hf_llama_sample PRIVATE weft::host)
add_executable(hf_neox_sample ${CMAKE_CURRENT_LIST_DIR}/hf_neox_sample.cpp)
target_link_libraries(hf_neox_sample PRIVATE weft::host)
add_executable(hf_moe_sample ${CMAKE_CURRENT_LIST_DIR}/hf_moe_sample.cpp)
target_link_libraries(hf_moe_sample PRIVATE weft::host)
add_executable(hf_gemma3_sample ${CMAKE_CURRENT_LIST_DIR}/hf_gemma3_sample.cpp)
target_link_libraries(hf_gemma3_sample PRIVATE weft::host)

# The samples run tiny models for the cross-checks (seconds at any level): -O1 builds them in
# about two thirds of -O3's time (hf_llama_sample was 110 s of one core at -O3).
foreach(sample safetensors_write_sample gpt2_checkpoint_sample hf_llama_sample hf_neox_sample hf_moe_sample hf_gemma3_sample)
  target_compile_options(${sample} PRIVATE $<$<CONFIG:Release>:-O1>)
endforeach()

find_program(WEFT_PYTHON python3)
if(WEFT_PYTHON)
  add_test(NAME train.safetensors_crosscheck
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/safetensors_crosscheck.py all
                   $<TARGET_FILE:safetensors_write_sample> ${CMAKE_CURRENT_BINARY_DIR}/safetensors_crosscheck)
  add_test(NAME train.gpt2_checkpoint_crosscheck
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gpt2_checkpoint_crosscheck.py all
                   $<TARGET_FILE:gpt2_checkpoint_sample> ${CMAKE_CURRENT_BINARY_DIR}/gpt2_checkpoint_crosscheck)
  add_test(NAME train.hf_llama_crosscheck
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_llama_crosscheck.py all
                   $<TARGET_FILE:hf_llama_sample> ${CMAKE_CURRENT_BINARY_DIR}/hf_llama_crosscheck)
  add_test(NAME train.hf_neox_crosscheck
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_neox_crosscheck.py all
                   $<TARGET_FILE:hf_neox_sample> ${CMAKE_CURRENT_BINARY_DIR}/hf_neox_crosscheck)
  add_test(NAME train.hf_moe_crosscheck
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_moe_crosscheck.py all
                   $<TARGET_FILE:hf_moe_sample> ${CMAKE_CURRENT_BINARY_DIR}/hf_moe_crosscheck)
  add_test(NAME train.hf_gemma3_crosscheck
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_gemma3_crosscheck.py all
                   $<TARGET_FILE:hf_gemma3_sample> ${CMAKE_CURRENT_BINARY_DIR}/hf_gemma3_crosscheck)
  set_tests_properties(train.safetensors_crosscheck train.gpt2_checkpoint_crosscheck train.hf_llama_crosscheck
                       train.hf_neox_crosscheck train.hf_moe_crosscheck train.hf_gemma3_crosscheck PROPERTIES
                       LABELS train SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
else()
  message(STATUS "weft: no python3 - the safetensors and GPT-2 checkpoint cross-checks are skipped")
endif()

# The transformers tier (label hf; tests/io/hf_transformers_tier.py, docs/checkpoints.md): for
# each Hugging Face family weft loads, transformers writes a random checkpoint that weft loads
# with transformers' logits, loss and gradients, and transformers loads weft's own checkpoint with
# weft's logits. torch and transformers come from PyPI (run.sh test installs them); without them
# the tests skip (exit 77), or fail under WEFT_REQUIRE_REFERENCES=1 (CI).
#   hf.transformers_<family>   llama, mistral, qwen2, qwen3 (hf_llama_sample), mixtral, qwen3_moe
#                              (hf_moe_sample), gpt_neox (hf_neox_sample), gemma3
#                              (hf_gemma3_sample), gpt2 (gpt2_checkpoint_sample)
if(WEFT_PYTHON)
  set(weft_hf_tier_families llama:hf_llama_sample mistral:hf_llama_sample qwen2:hf_llama_sample
      qwen3:hf_llama_sample mixtral:hf_moe_sample qwen3_moe:hf_moe_sample gpt_neox:hf_neox_sample
      gemma3:hf_gemma3_sample gpt2:gpt2_checkpoint_sample)
  foreach(entry IN LISTS weft_hf_tier_families)
    string(REPLACE ":" ";" entry "${entry}")
    list(GET entry 0 family)
    list(GET entry 1 sample)
    add_test(NAME hf.transformers_${family}
             COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_transformers_tier.py ${family}
                     $<TARGET_FILE:${sample}> ${CMAKE_CURRENT_BINARY_DIR}/hf_transformers_tier/${family})
    set_tests_properties(hf.transformers_${family} PROPERTIES
                         LABELS hf SKIP_RETURN_CODE 77 TIMEOUT 300
                         ENVIRONMENT "CUDA_VISIBLE_DEVICES=;OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
  endforeach()
endif()
