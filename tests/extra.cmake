# Tests that run programs: the demo's loss goal on a shortened run, the custom-layer example,
# the docs' snippets, the schedule timeline tool. (The checkpoint cross-checks against the
# reference implementations are in tests/io/io.cmake.)

# ---- the main job, shortened: 'tiny' preset, the loss must fall below a goal ----
if(TARGET train_gpt)
  add_test(NAME demo.train_gpt_shortened
           COMMAND train_gpt --preset small --steps 1200 --eval-every 400 --eval-batches 16 --quiet --sample 80
                   --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/demo_checkpoint --log ${CMAKE_CURRENT_BINARY_DIR}/demo_metrics.jsonl
                   --expect-val-loss 2.0)
  set_tests_properties(demo.train_gpt_shortened PROPERTIES LABELS demo TIMEOUT 900
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
  # Programs checked by exit status *and* output (cmake/run_expect.cmake).
  set(run_expect ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
  add_test(NAME demo.train_gpt_bad_option
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:train_gpt>|--steps|banana" -DEXPECT_RC=nonzero
                   "-DEXPECT=banana" -P ${run_expect})
  add_test(NAME demo.train_gpt_missing_data
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:train_gpt>|--data|/nonexistent/corpus.bin|--steps|1"
                   -DEXPECT_RC=nonzero "-DEXPECT=nonexistent/corpus.bin" -P ${run_expect})
  add_test(NAME demo.train_gpt_help
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:train_gpt>|--help" "-DEXPECT=--preset" -P ${run_expect})
  set_tests_properties(demo.train_gpt_bad_option demo.train_gpt_missing_data demo.train_gpt_help PROPERTIES LABELS demo)
endif()
if(TARGET custom_layer)
  add_test(NAME demo.custom_layer COMMAND custom_layer 120)
  set_tests_properties(demo.custom_layer PROPERTIES LABELS demo TIMEOUT 600
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
endif()

# ---- docs show code that compiles: snippets equal their marked regions in built files ----
find_program(WEFT_PYTHON python3)
if(WEFT_PYTHON)
  add_test(NAME docs.snippets_match_sources COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_snippets.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs.snippets_match_sources PROPERTIES LABELS docs)
endif()

# ---- the schedule timeline tool writes an SVG ----
if(TARGET schedule_svg)
  add_test(NAME tools.schedule_svg
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:schedule_svg>|interleaved|4|8|2" "-DEXPECT=</svg>"
                   -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
  set_tests_properties(tools.schedule_svg PROPERTIES LABELS tools)
endif()
