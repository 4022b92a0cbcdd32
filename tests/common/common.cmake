# References that cannot be skipped in CI (tests/common/reference_skip.py; docs/model_testing.md,
# "References"), included by tests/CMakeLists.txt. Every Python cross-check against a reference
# package is run here by `python3 -S` (no site-packages: numpy, safetensors, tiktoken, ... cannot
# import) and must
#   references.<script>.skips               exit 77 with one "SKIP:" line (a developer's partial machine)
#   references.<script>.fails_when_required exit 1 with one "FAIL:" line under WEFT_REQUIRE_REFERENCES=1 (CI)
# A script added to the list must import its references through reference_skip.require (a
# listed script that does not exist yet is left out).
find_program(WEFT_PYTHON python3)
set(WEFT_REFERENCE_SCRIPTS
    io/safetensors_crosscheck.py io/gpt2_checkpoint_crosscheck.py io/hf_llama_crosscheck.py io/hf_neox_crosscheck.py
    io/hf_moe_crosscheck.py io/hf_gemma3_crosscheck.py model/llama_reference.py train/reference_trainer.py
    data/bpe_crosscheck.py io/hf_transformers_tier.py tools/hf_saved_config_check.py)
if(WEFT_PYTHON)
  foreach(script IN LISTS WEFT_REFERENCE_SCRIPTS)
    get_filename_component(stem ${script} NAME_WE)
    set(path ${PROJECT_SOURCE_DIR}/tests/${script})
    if(NOT EXISTS ${path})
      continue()
    endif()
    # (the arguments are never read: the check stops at its imports)
    add_test(NAME references.${stem}.skips
             COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${CMAKE_COMMAND}|-E|env|WEFT_REQUIRE_REFERENCES=0|${WEFT_PYTHON}|-S|${path}|all|/nonexistent/sample|/nonexistent/work"
                     -DEXPECT_RC=77 "-DEXPECT=^${stem}.py: SKIP: the Python module '[a-z_.]+' does not import [^\n]*\n$"
                     -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
    add_test(NAME references.${stem}.fails_when_required
             COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${CMAKE_COMMAND}|-E|env|WEFT_REQUIRE_REFERENCES=1|${WEFT_PYTHON}|-S|${path}|all|/nonexistent/sample|/nonexistent/work"
                     -DEXPECT_RC=1 "-DEXPECT=^${stem}.py: FAIL: the Python module '[a-z_.]+' does not import [^\n]*WEFT_REQUIRE_REFERENCES=1 makes a missing reference a failure\n$"
                     -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
    set_tests_properties(references.${stem}.skips references.${stem}.fails_when_required PROPERTIES
                         LABELS references TIMEOUT 60)
  endforeach()
endif()

# run.sh's pip step, against a python3 on which nothing imports and a stub cmake: under
# WEFT_REQUIRE_REFERENCES=1 (and with CI=true) it stops with one line before the build; without
# either it says the cross-checks will be Skipped and goes on (tests/common/run_sh_references.sh).
find_program(WEFT_BASH bash)
if(WEFT_BASH)
  foreach(case_ required ci partial)
    add_test(NAME references.run_sh_pip.${case_}
             COMMAND ${WEFT_BASH} ${CMAKE_CURRENT_LIST_DIR}/run_sh_references.sh ${PROJECT_SOURCE_DIR} ${case_})
    set_tests_properties(references.run_sh_pip.${case_} PROPERTIES LABELS references SKIP_RETURN_CODE 77 TIMEOUT 60)
  endforeach()
endif()
