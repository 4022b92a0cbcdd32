# weft's command-line tools beyond schedule_svg (included from the top-level CMakeLists.txt).

# tokenize_shards: a directory of text files -> token shards (byte-level or GPT-2 BPE).
find_package(Threads REQUIRED)
add_executable(tokenize_shards ${CMAKE_CURRENT_LIST_DIR}/tokenize_shards.cpp)
target_link_libraries(tokenize_shards PRIVATE weft::weft Threads::Threads)
target_compile_options(tokenize_shards PRIVATE -Wall -Wextra)
