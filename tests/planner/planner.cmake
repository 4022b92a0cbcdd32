# plan_cluster runs as tests: exit status and output checked by check_plan_cluster.py
# (text sections; JSON fields and their consistency; the HTML report's SVG charts; bad input).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(TARGET plan_cluster AND Python3_Interpreter_FOUND)
  set(_check ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py)
  set(_exe $<TARGET_FILE:plan_cluster>)
  add_test(NAME planner.plan_cluster.llama70b_text
           COMMAND ${Python3_EXECUTABLE} ${_check} text ${_exe} --model llama2-70b --cluster h100-sxm --nodes 8
                   --global-batch 1024 --seq 4096 --tokens 2e12)
  add_test(NAME planner.plan_cluster.gpt_json
           COMMAND ${Python3_EXECUTABLE} ${_check} json ${_exe} --layers 24 --width 2048 --heads 16 --vocab 50304 --seq 2048
                   --global-batch 256 --tokens 3e10 --cluster a100-80gb --nodes 2 --json)
  add_test(NAME planner.plan_cluster.fixed_json
           COMMAND ${Python3_EXECUTABLE} ${_check} json ${_exe} --model llama3-8b --seq 4096 --global-batch 512 --cluster h200
                   --nodes 4 --tp 4 --pp 2 --dp 4 --zero 1 --schedule interleaved --interleave 2 --sp --recompute selective --json)
  add_test(NAME planner.plan_cluster.gpt3_html
           COMMAND ${Python3_EXECUTABLE} ${_check} html ${_exe} --model gpt3-175b --cluster a100-80gb --nodes 128
                   --global-batch 1536 --seq 2048 --tokens 3e11 --max-nodes 256)
  add_test(NAME planner.plan_cluster.cpu_html
           COMMAND ${Python3_EXECUTABLE} ${_check} html ${_exe} --layers 4 --width 128 --heads 4 --vocab 256 --seq 64
                   --global-batch 16 --cluster cpu-mpi --nodes 1 --tokens 1e7 --pp 2 --schedule 1f1b)
  add_test(NAME planner.plan_cluster.bad_option COMMAND ${Python3_EXECUTABLE} ${_check} bad ${_exe} --layers 4 --bogus 1)
  add_test(NAME planner.plan_cluster.bad_number COMMAND ${Python3_EXECUTABLE} ${_check} bad ${_exe} --model gpt2-small --nodes two)
  add_test(NAME planner.plan_cluster.bad_split
           COMMAND ${Python3_EXECUTABLE} ${_check} bad ${_exe} --model gpt2-small --cluster a100-80gb --tp 2 --pp 2 --dp 4)
  set_tests_properties(planner.plan_cluster.llama70b_text planner.plan_cluster.gpt_json planner.plan_cluster.fixed_json
                       planner.plan_cluster.gpt3_html planner.plan_cluster.cpu_html planner.plan_cluster.bad_option
                       planner.plan_cluster.bad_number planner.plan_cluster.bad_split
                       PROPERTIES LABELS planner TIMEOUT 120)
endif()

# A mixture of experts: the search adds expert parallelism (text names ep > 1; JSON consistent with ep).
# ZeRO-1: without expert parallelism Mixtral's replicated parameters and gradients do not fit
# (with ZeRO-3 over 32 data-parallel ranks, gathering layer by layer, they do, and the cost model
# prices that 7% faster than ep 8 with ZeRO-1).
if(TARGET plan_cluster AND Python3_Interpreter_FOUND)
  add_test(NAME planner.plan_cluster.moe_text
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py moe $<TARGET_FILE:plan_cluster>
                   --model mixtral-8x7b --cluster h100-sxm --nodes 4 --global-batch 512 --seq 4096 --pp 1 --zero 1
                   --max-nodes 8)
  add_test(NAME planner.plan_cluster.moe_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py json $<TARGET_FILE:plan_cluster>
                   --family gpt --layers 4 --width 512 --heads 8 --vocab 32000 --experts 16 --top-k 2 --seq 1024
                   --global-batch 64 --cluster a100-80gb --nodes 1 --memory-gb 1.5 --tokens 1e9 --json)
  add_test(NAME planner.plan_cluster.moe_bad_ep
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py bad $<TARGET_FILE:plan_cluster>
                   --model mixtral-8x7b --ep 3)
  set_tests_properties(planner.plan_cluster.moe_text planner.plan_cluster.moe_json planner.plan_cluster.moe_bad_ep
                       PROPERTIES LABELS planner TIMEOUT 120)
endif()

# The compile-time search over a realistic space compiles in under 60 s (benchmarks/planner).
add_test(NAME planner.auto_strategy_compile_time
         COMMAND bash ${PROJECT_SOURCE_DIR}/benchmarks/planner/bench_auto_strategy.sh ${CMAKE_CXX_COMPILER}
                 ${CMAKE_CURRENT_BINARY_DIR} 60)
set_tests_properties(planner.auto_strategy_compile_time PROPERTIES LABELS "planner;bench" TIMEOUT 180)

# two clusters joined by a slow link: the text report still complete
if(TARGET plan_cluster AND Python3_Interpreter_FOUND)
  add_test(NAME planner.plan_cluster.islands_text
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py text $<TARGET_FILE:plan_cluster>
                   --model llama2-70b --cluster h100-sxm --nodes 16 --islands 2 --island-gbps 1.25 --global-batch 1024
                   --seq 4096 --tokens 2e12 --max-nodes 16)
  set_tests_properties(planner.plan_cluster.islands_text PROPERTIES LABELS planner TIMEOUT 120)
endif()

# flash attention as an input: every strategy named carries it, none with selective recompute;
# --flash contradicts --unfused-attention (the flash kernels are fused)
if(TARGET plan_cluster AND Python3_Interpreter_FOUND)
  add_test(NAME planner.plan_cluster.flash_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py json $<TARGET_FILE:plan_cluster>
                   --model llama3-8b --seq 8192 --global-batch 256 --cluster a100-80gb --nodes 2 --tokens 1e11 --flash --json)
  add_test(NAME planner.plan_cluster.flash_bad_unfused
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py bad $<TARGET_FILE:plan_cluster>
                   --model llama3-8b --flash --unfused-attention)
  set_tests_properties(planner.plan_cluster.flash_json planner.plan_cluster.flash_bad_unfused PROPERTIES LABELS planner TIMEOUT 120)
endif()

# --stack and --calibrate (stack_profile.hpp): one measured step of a pinned layout fits the GEMM
# factor (MT-NLG 530B's 126 TFLOP/s a GPU on 2240 A100 as tokens/s) and the report reproduces it
if(TARGET plan_cluster AND Python3_Interpreter_FOUND)
  add_test(NAME planner.plan_cluster.calibrate_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py calibrate $<TARGET_FILE:plan_cluster>
                   --family gpt --layers 105 --width 20480 --heads 128 --vocab 51200 --seq 2048 --global-batch 1920
                   --cluster a100-80gb --nodes 280 --tp 8 --pp 35 --dp 8 --micro-batch 1 --zero 1 --recompute full
                   --schedule 1f1b --no-sp --no-overlap --unfused-attention --calibrate 65567 --max-nodes 280 --json)
  add_test(NAME planner.plan_cluster.calibrate_bad_layout
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py bad $<TARGET_FILE:plan_cluster>
                   --model gpt2-small --calibrate 1000)
  add_test(NAME planner.plan_cluster.bad_stack
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py bad $<TARGET_FILE:plan_cluster>
                   --model gpt2-small --stack jax)
  set_tests_properties(planner.plan_cluster.calibrate_json planner.plan_cluster.calibrate_bad_layout planner.plan_cluster.bad_stack
                       PROPERTIES LABELS planner TIMEOUT 120)
endif()

# issue 31's cost terms on the command line: context parallelism, uneven stages, partial recompute,
# 18-byte states, dropout, allocator and framework memory, FP8, scatter-gather, the H800 preset;
# a mixture with shared experts and dense first blocks, experts with a pipeline; bad values refused
if(TARGET plan_cluster AND Python3_Interpreter_FOUND)
  add_test(NAME planner.plan_cluster.terms_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py json $<TARGET_FILE:plan_cluster>
                   --model llama3-70b --cluster h800 --nodes 8 --seq 8192 --global-batch 256 --tp 8 --pp 4 --cp 2
                   --first-stage-layers 19 --last-stage-layers 19 --partial-recompute --f32-grads --dropout
                   --allocator-overhead 0.1 --framework-gb 3 --fp8 --scatter-gather --tokens 1e11 --json)
  add_test(NAME planner.plan_cluster.deepseek_moe_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py json $<TARGET_FILE:plan_cluster>
                   --family llama --layers 8 --width 1024 --heads 16 --vocab 32000 --experts 16 --top-k 2 --ffn 512
                   --shared-ffn 1024 --dense-layers 2 --dense-ffn 4096 --seq 2048 --global-batch 64 --cluster b200 --nodes 1
                   --pp 2 --ep 4 --zero3-buffers units --tokens 1e9 --json)
  add_test(NAME planner.plan_cluster.zero3_tensors_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py json $<TARGET_FILE:plan_cluster>
                   --model gpt3-175b --cluster a100-80gb --nodes 96 --seq 2048 --global-batch 1536 --tp 1 --pp 1 --zero 3
                   --micro-batch 2 --recompute full --zero3-buffers tensors --tokens 1e10 --json)
  add_test(NAME planner.plan_cluster.interleaved_uneven_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py json $<TARGET_FILE:plan_cluster>
                   --model llama3-405b --cluster h100-sxm --nodes 1024 --seq 8192 --global-batch 2048 --tp 8 --pp 16
                   --first-stage-layers 7 --last-stage-layers 7 --schedule interleaved --flash --partial-recompute
                   --tokens 1e12 --json)
  add_test(NAME planner.plan_cluster.bad_zero3_buffers
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py bad $<TARGET_FILE:plan_cluster>
                   --model llama3-8b --zero3-buffers fsdp)
  add_test(NAME planner.plan_cluster.bad_dense_layers
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_plan_cluster.py bad $<TARGET_FILE:plan_cluster>
                   --model llama3-8b --dense-layers 2)
  set_tests_properties(planner.plan_cluster.terms_json planner.plan_cluster.deepseek_moe_json
                       planner.plan_cluster.zero3_tensors_json planner.plan_cluster.interleaved_uneven_json
                       planner.plan_cluster.bad_zero3_buffers planner.plan_cluster.bad_dense_layers
                       PROPERTIES LABELS planner TIMEOUT 120)
endif()
