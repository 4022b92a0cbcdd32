# Program-running tests of weft's command-line tools (tools/), included by tests/CMakeLists.txt.
#   tools.hf_model_type   the weft types hf_model_type writes for published Hugging Face configs
#                         (tests/tools/hf_configs/) compile and have Hugging Face's parameter
#                         counts; configs weft cannot build are refused in one line
find_program(WEFT_PYTHON python3)
if(TARGET hf_model_type AND WEFT_PYTHON)
  add_test(NAME tools.hf_model_type
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hf_model_type_check.py $<TARGET_FILE:hf_model_type>
                   ${CMAKE_CXX_COMPILER} ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_BINARY_DIR}/hf_model_type_check)
  set_tests_properties(tools.hf_model_type PROPERTIES LABELS tools TIMEOUT 300)
endif()
