# Program-running tests of weft's command-line tools (tools/), included by tests/CMakeLists.txt.
#   tools.hf_model_type   the weft types hf_model_type writes for published Hugging Face configs
#                         (tests/tools/hf_configs/) compile and have Hugging Face's parameter
#                         counts; configs weft cannot build are refused in one line
#   tools.hf_config_transformers5
#                         the config.json files transformers 5 writes (rope_parameters, per-layer
#                         rope entries, partial_rotary_factor, num_local_experts; in
#                         tests/tools/hf_configs_transformers5/, and legacy/ in the older spelling):
#                         hf_model_type's type for each, the config.json check of load_hf_weights
#                         (hf_config_check) accepting that type and refusing the rotary base,
#                         scaling, rotated fraction or expert count of the misread one, and a
#                         field weft cannot find or read refused in one line naming it
#   tools.hf_saved_config_transformers (label hf; Skipped without transformers, failed in CI)
#                         the config.json save_hf_weights writes for each tests/io/hf_*_sample, as
#                         transformers' AutoConfig reads it: the rotary settings and expert count of
#                         the weft type hf_model_type reads from the same file
find_program(WEFT_PYTHON python3)
if(TARGET hf_model_type AND WEFT_PYTHON)
  add_test(NAME tools.hf_model_type
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_model_type_check.py $<TARGET_FILE:hf_model_type>
                   ${CMAKE_CXX_COMPILER} ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_BINARY_DIR}/hf_model_type_check)
  set_tests_properties(tools.hf_model_type PROPERTIES LABELS tools TIMEOUT 300)

  add_executable(hf_config_check ${CMAKE_CURRENT_LIST_DIR}/hf_config_check.cpp)
  target_link_libraries(hf_config_check PRIVATE weft::host)
  target_compile_options(hf_config_check PRIVATE $<$<CONFIG:Release>:-O1>)  # checks configs, computes nothing
  add_test(NAME tools.hf_config_transformers5
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_config_check.py $<TARGET_FILE:hf_model_type>
                   $<TARGET_FILE:hf_config_check> ${CMAKE_CURRENT_BINARY_DIR}/hf_config_check_scratch)
  set_tests_properties(tools.hf_config_transformers5 PROPERTIES LABELS tools TIMEOUT 120)
endif()
if(TARGET hf_model_type AND TARGET hf_llama_sample AND TARGET hf_neox_sample AND TARGET hf_moe_sample
   AND TARGET hf_gemma3_sample AND WEFT_PYTHON)
  add_test(NAME tools.hf_saved_config_transformers
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_saved_config_check.py $<TARGET_FILE:hf_model_type>
                   $<TARGET_FILE:hf_llama_sample> $<TARGET_FILE:hf_neox_sample> $<TARGET_FILE:hf_moe_sample>
                   $<TARGET_FILE:hf_gemma3_sample> ${CMAKE_CURRENT_BINARY_DIR}/hf_saved_config_check)
  set_tests_properties(tools.hf_saved_config_transformers PROPERTIES LABELS "tools;hf" SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
