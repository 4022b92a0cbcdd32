# weft's command-line tools beyond schedule_svg (included from the top-level CMakeLists.txt).

# tokenize_shards: a directory of text files -> token shards (byte-level or GPT-2 BPE).
find_package(Threads REQUIRED)
add_executable(tokenize_shards ${CMAKE_CURRENT_LIST_DIR}/tokenize_shards.cpp)
target_link_libraries(tokenize_shards PRIVATE weft::weft Threads::Threads)
target_compile_options(tokenize_shards PRIVATE -Wall -Wextra)

# hf_model_type: the weft type of a Hugging Face config.json (io/hf_model_type.hpp).
add_executable(hf_model_type ${CMAKE_CURRENT_LIST_DIR}/hf_model_type.cpp)
target_link_libraries(hf_model_type PRIVATE weft::weft)
target_compile_options(hf_model_type PRIVATE -Wall -Wextra)
