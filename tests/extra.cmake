# Tests that run programs: the demo's loss goal on a shortened run, the custom-layer example,
# and the checkpoint cross-check against the reference safetensors implementation (Python).

# ---- the main job, shortened: 'tiny' preset, the loss must fall below a goal ----
if(TARGET train_gpt)
  add_test(NAME demo.train_gpt_shortened
           COMMAND train_gpt --preset tiny --steps 300 --eval-every 100 --eval-batches 8 --quiet --sample 80
                   --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/demo_checkpoint --log ${CMAKE_CURRENT_BINARY_DIR}/demo_metrics.jsonl
                   --expect-val-loss 2.5)
  set_tests_properties(demo.train_gpt_shortened PROPERTIES LABELS demo TIMEOUT 900
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
  add_test(NAME demo.train_gpt_bad_option COMMAND train_gpt --steps banana)
  set_tests_properties(demo.train_gpt_bad_option PROPERTIES LABELS demo WILL_FAIL TRUE)
  add_test(NAME demo.train_gpt_missing_data COMMAND train_gpt --data /nonexistent/corpus.bin --steps 1)
  set_tests_properties(demo.train_gpt_missing_data PROPERTIES LABELS demo
                       PASS_REGULAR_EXPRESSION "nonexistent/corpus.bin")
  add_test(NAME demo.train_gpt_help COMMAND train_gpt --help)
  set_tests_properties(demo.train_gpt_help PROPERTIES LABELS demo PASS_REGULAR_EXPRESSION "--preset")
endif()
if(TARGET custom_layer)
  add_test(NAME demo.custom_layer COMMAND custom_layer 120)
  set_tests_properties(demo.custom_layer PROPERTIES LABELS demo TIMEOUT 600
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
endif()
