# train_gpt's checkpoints are atomic (docs/checkpoints.md), included by long_jobs.cmake:
# MODE kill_save:  after a good save, train_gpt is killed by SIGKILL during its saves (a save after
#                  every step): at a random moment (TIMEOUT, seeded delays), and at a chosen point
#                  of a chosen save (WEFT_TEST_CHECKPOINT_KILL, seeded: a run of data, a rename, the
#                  manifest, the step directory, `latest`, rotation). After each kill the directory
#                  must resume, at the newest save that finished or later, from files that are
#                  verified (a flipped byte in them is then refused with one line) — never nothing,
#                  never unverified. Then the layout: DIR/latest, DIR/step-N/ with the Hugging Face
#                  files, the newest --keep step directories, no leftovers.
# MODE unverified: a checkpoint without its manifest (what a kill left in the old in-place save),
#                  with a flipped byte, is refused with one line; a checkpoint directory of the old
#                  layout (files directly in DIR) with its manifest still resumes, verified.
# MODE unwritable: an unwritable --checkpoint is one line and exit status 2 before the first step.
# The runs are independent of the layout where they can be (the directory that loads is DIR/latest's
# target, else DIR), so that they show what the old in-place save did wrong.

# A corpus of its own (about 40 KB), so that every run starts at once and no test needs fortune(6).
set(text "")
foreach(i RANGE 1 500)
  math(EXPR j "${i} * 7 % 13")
  string(APPEND text "Line ${i}: the quick brown fox jumps over ${j} lazy dogs; the dogs sleep on.\n")
endforeach()
set(corpus ${WORK}/corpus.txt)
file(WRITE ${corpus} "${text}")
set(saves --preset tiny --data ${corpus} --eval-every 0 --eval-batches 1 --sample 0)
unset(ENV{WEFT_TEST_CHECKPOINT_KILL})

# Seeded pseudo-random numbers (a 31-bit LCG): the same trials on every run.
set(lcg 20261206)
macro(next_random var modulus)
  math(EXPR lcg "(${lcg} * 1103515245 + 12345) % 2147483648")
  math(EXPR ${var} "(${lcg} / 65536) % ${modulus}")
endmacro()

# The directory a resume from `root` reads: root/latest's target, else root itself.
function(dir_of root var)
  if(EXISTS ${root}/latest)
    file(STRINGS ${root}/latest name LIMIT_COUNT 1)
    set(${var} ${root}/${name} PARENT_SCOPE)
  else()
    set(${var} ${root} PARENT_SCOPE)
  endif()
endfunction()

# Flips one bit of byte `at` of `file` in place.
function(flip_byte file at)
  file(READ ${file} before OFFSET ${at} LIMIT 1 HEX)
  math(EXPR v "0x${before} ^ 0x40")
  math(EXPR d2 "${v} / 64")
  math(EXPR d1 "${v} / 8 % 8")
  math(EXPR d0 "${v} % 8")
  execute_process(COMMAND sh -c "printf '\\${d2}${d1}${d0}' | dd of='${file}' bs=1 seek=${at} conv=notrunc 2>/dev/null")
  file(READ ${file} after OFFSET ${at} LIMIT 1 HEX)
  if(after STREQUAL before)
    message(FATAL_ERROR "could not flip byte ${at} of ${file}")
  endif()
endfunction()

# Resumes from `dir` without training or saving: ${var}_rc, ${var}_err, ${var}_step (-1: none).
function(probe var dir)
  execute_process(COMMAND ${TRAIN_GPT} ${saves} --quiet --steps 0 --resume ${dir} --checkpoint "" --log ""
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(step -1)
  if(out MATCHES "resumed from [^\n]* at step ([0-9]+)")
    set(step ${CMAKE_MATCH_1})
  endif()
  string(STRIP "${err}" err)
  set(${var}_rc "${rc}" PARENT_SCOPE)
  set(${var}_err "${err}" PARENT_SCOPE)
  set(${var}_step ${step} PARENT_SCOPE)
endfunction()

# `dir` must be refused: a non-zero status, one line on stderr containing `expect`, no resume.
function(expect_refused dir expect why)
  probe(p ${dir})
  message("---- --resume ${dir} (${why}) -> ${p_rc}: ${p_err}")
  if(p_rc EQUAL 0 OR NOT p_step EQUAL -1)
    message(FATAL_ERROR "${why}: --resume ${dir} loaded it (status ${p_rc}, step ${p_step}); it must be refused")
  endif()
  if(p_err STREQUAL "" OR p_err MATCHES "\n" OR NOT p_err MATCHES "${expect}")
    message(FATAL_ERROR "${why}: the refusal is not one line matching '${expect}':\n${p_err}")
  endif()
endfunction()

# `root` resumes at a step >= `at_least`, from files that are verified: a copy with one byte of
# its model file flipped (seeded) is refused. Sets ${var} to the step.
function(expect_verified root at_least var why)
  probe(p ${root})
  if(NOT p_rc EQUAL 0 OR p_step LESS at_least)
    message(FATAL_ERROR "${why}: --resume ${root} -> status ${p_rc}, step ${p_step}, expected a resume at step "
                        ">= ${at_least} (the newest save that finished)\n${p_err}")
  endif()
  file(REMOVE_RECURSE ${WORK}/flipped)
  file(COPY ${root}/ DESTINATION ${WORK}/flipped)
  dir_of(${WORK}/flipped used)
  file(SIZE ${used}/model.safetensors size)
  next_random(r 100000)
  math(EXPR at "${size} - 1 - ${r} % (${size} / 2)")  # in the second half: tensor data
  flip_byte(${used}/model.safetensors ${at})
  expect_refused(${WORK}/flipped "checksum|manifest" "${why}, byte ${at} of the model file flipped")
  set(${var} ${p_step} PARENT_SCOPE)
  set(lcg ${lcg} PARENT_SCOPE)
endfunction()

# The newest "checkpoint (periodic): ... at step N" of an output (a save that finished), or `default`.
function(last_saved out default var)
  string(REGEX MATCHALL "checkpoint \\(periodic\\): [^\n]* at step [0-9]+" lines "${out}")
  set(last ${default})
  foreach(l IN LISTS lines)
    string(REGEX MATCH "[0-9]+$" n "${l}")
    if(n GREATER last)
      set(last ${n})
    endif()
  endforeach()
  set(${var} ${last} PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "kill_save")
  execute_process(COMMAND ${TRAIN_GPT} ${saves} --steps 2 --checkpoint ck --log first.jsonl WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the first run failed (${rc}):\n${out}${err}")
  endif()
  set(good 2)  # the newest save known to have finished
  expect_verified(${WORK}/ck ${good} good "after a finished save")

  # 1. Killed at a random moment, while it saves after every step.
  foreach(trial RANGE 1 8)
    next_random(ms 1500)
    math(EXPR ms "${ms} + 250")
    if(ms LESS 1000)
      set(seconds "0.${ms}")
    else()
      math(EXPR s "${ms} / 1000")
      math(EXPR f "${ms} % 1000 + 1000")
      string(SUBSTRING "${f}" 1 3 f)
      set(seconds "${s}.${f}")
    endif()
    execute_process(COMMAND ${TRAIN_GPT} ${saves} --steps 1000000 --checkpoint ck --checkpoint-every 1 --resume ck
                            --log timed.jsonl
                    WORKING_DIRECTORY ${WORK} TIMEOUT ${seconds} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc MATCHES "timeout")
      message(FATAL_ERROR "timed trial ${trial}: train_gpt ended (${rc}) before it was killed:\n${out}${err}")
    endif()
    last_saved("${out}" ${good} good)
    expect_verified(${WORK}/ck ${good} good "timed trial ${trial}: SIGKILL after ${seconds} s")
    message(STATUS "timed trial ${trial}: killed after ${seconds} s; resumes verified at step ${good}")
  endforeach()

  # 2. Killed at a chosen point of a chosen save: every save has at least 10 events (headers,
  #    two runs of data, the old manifest, three renames, the manifest, the directory, latest).
  foreach(trial RANGE 1 8)
    next_random(j 3)
    next_random(event 10)
    math(EXPR event "${event} + 1")
    math(EXPR at "${good} + 1 + ${j}")
    math(EXPR steps "${good} + 3")
    set(ENV{WEFT_TEST_CHECKPOINT_KILL} "0:${event}:${at}")
    execute_process(COMMAND ${TRAIN_GPT} ${saves} --steps ${steps} --checkpoint ck --checkpoint-every 1 --resume ck
                            --log events.jsonl
                    WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    unset(ENV{WEFT_TEST_CHECKPOINT_KILL})
    if(NOT err MATCHES "killing rank 0 at unix time [0-9]+ in the middle of a save \\(([^)]*)\\)")
      message(FATAL_ERROR "event trial ${trial}: the save of step ${at} was not killed at its event ${event} "
                          "(status ${rc}):\n${out}${err}")
    endif()
    set(what "${CMAKE_MATCH_1}")
    last_saved("${out}" ${good} good)
    expect_verified(${WORK}/ck ${good} now "event trial ${trial}: SIGKILL at event ${event} (${what}) of the save of step ${at}")
    if(now GREATER at OR (now LESS at AND NOT now EQUAL good))
      message(FATAL_ERROR "event trial ${trial}: resumes at step ${now}, neither the last good save (${good}) nor "
                          "the killed one (${at})")
    endif()
    set(good ${now})
    message(STATUS "event trial ${trial}: killed at '${what}' of the save of step ${at}; resumes verified at step ${good}")
  endforeach()

  # 3. The layout after a run that finishes: latest, the newest 3 (--keep 3) step directories, each
  #    with the Hugging Face files, and no leftovers of the killed saves.
  math(EXPR steps "${good} + 4")
  execute_process(COMMAND ${TRAIN_GPT} ${saves} --quiet --steps ${steps} --checkpoint ck --checkpoint-every 1
                          --keep 3 --resume ck --log last.jsonl
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the last run failed (${rc}):\n${out}${err}")
  endif()
  if(NOT out MATCHES "checkpoint: ck/step-0*${steps} \\(model.safetensors, optimizer.safetensors, config.json; ck/latest names it\\)")
    message(FATAL_ERROR "no final checkpoint line naming ck/step-${steps}:\n${out}")
  endif()
  file(GLOB entries RELATIVE ${WORK}/ck LIST_DIRECTORIES true ${WORK}/ck/* ${WORK}/ck/.*)
  list(SORT entries)
  set(want latest)
  foreach(s RANGE 2 0 -1)
    math(EXPR n "${steps} - ${s}")
    string(LENGTH "${n}" len)
    math(EXPR pad "9 - ${len}")
    string(REPEAT "0" ${pad} zeros)
    list(APPEND want step-${zeros}${n})
  endforeach()
  if(NOT entries STREQUAL want)
    message(FATAL_ERROR "ck holds '${entries}', expected '${want}'")
  endif()
  list(GET want -1 newest)
  file(READ ${WORK}/ck/latest latest)
  if(NOT latest STREQUAL "${newest}\n")
    message(FATAL_ERROR "ck/latest holds '${latest}', not ${newest}")
  endif()
  foreach(f config.json model.safetensors optimizer.safetensors manifest.json)
    if(NOT EXISTS ${WORK}/ck/${newest}/${f})
      message(FATAL_ERROR "ck/${newest} has no ${f}")
    endif()
  endforeach()
  file(READ ${WORK}/ck/${newest}/config.json config)
  if(NOT config MATCHES "\"model_type\": \"gpt2\"")
    message(FATAL_ERROR "ck/${newest}/config.json is not a GPT-2 config:\n${config}")
  endif()
  message(STATUS "8 timed and 8 chosen kills: each resumed verified; then ck holds ${entries}")

elseif(MODE STREQUAL "unverified")
  execute_process(COMMAND ${TRAIN_GPT} ${saves} --quiet --steps 3 --checkpoint ck --log m.jsonl WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the run failed (${rc}):\n${out}${err}")
  endif()
  dir_of(${WORK}/ck saved)
  # The checkpoint without its manifest (a kill between the old in-place save's removal of the
  # manifest and its rewrite), one byte of a tensor flipped: refused, not loaded unverified.
  file(COPY ${WORK}/ck/ DESTINATION ${WORK}/no_manifest)
  dir_of(${WORK}/no_manifest d)
  file(REMOVE ${d}/manifest.json)
  file(SIZE ${d}/model.safetensors size)
  math(EXPR at "${size} - 1001")
  flip_byte(${d}/model.safetensors ${at})
  expect_refused(${WORK}/no_manifest "manifest.json" "no manifest, a flipped byte")
  # The old layout, files directly in the directory: with its manifest it resumes, verified ...
  file(MAKE_DIRECTORY ${WORK}/old_layout)
  foreach(f config.json model.safetensors optimizer.safetensors manifest.json)
    file(COPY ${saved}/${f} DESTINATION ${WORK}/old_layout)
  endforeach()
  probe(old ${WORK}/old_layout)
  if(NOT old_rc EQUAL 0 OR NOT old_step EQUAL 3)
    message(FATAL_ERROR "a checkpoint of the old layout with its manifest does not resume (${old_rc}, step ${old_step}):\n${old_err}")
  endif()
  file(COPY ${WORK}/old_layout/ DESTINATION ${WORK}/old_flipped)
  file(SIZE ${WORK}/old_flipped/optimizer.safetensors size)
  math(EXPR at "${size} - 2000")
  flip_byte(${WORK}/old_flipped/optimizer.safetensors ${at})
  expect_refused(${WORK}/old_flipped "checksum" "the old layout, a flipped byte")
  # ... and without it, it is refused with what to do.
  file(REMOVE ${WORK}/old_layout/manifest.json)
  expect_refused(${WORK}/old_layout "has no manifest.json.*refusing to load it; resume from another checkpoint"
                 "the old layout without its manifest")
  message(STATUS "no manifest: refused; a flipped byte: refused; the old layout with its manifest: resumes")

elseif(MODE STREQUAL "unwritable")
  file(WRITE ${WORK}/plain "not a directory\n")
  foreach(dir plain plain/sub)
    string(TIMESTAMP t0 "%s")
    execute_process(COMMAND ${TRAIN_GPT} ${saves} --quiet --steps 300 --checkpoint ${dir} --log ${WORK}/unwritable.jsonl
                    WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    string(STRIP "${err}" err)
    message("---- --checkpoint ${dir} -> ${rc}: ${err}")
    if(NOT rc EQUAL 2)
      message(FATAL_ERROR "--checkpoint ${dir}: exit status ${rc}, expected 2\n${out}${err}")
    endif()
    if(err MATCHES "\n" OR NOT err MATCHES "^train_gpt: --checkpoint ${dir}: ")
      message(FATAL_ERROR "--checkpoint ${dir}: not one line naming the option and the directory:\n${err}")
    endif()
    if(EXISTS ${WORK}/unwritable.jsonl OR out MATCHES "step [0-9]")
      message(FATAL_ERROR "--checkpoint ${dir}: steps ran before the refusal (found only at the first save)")
    endif()
  endforeach()
  message(STATUS "an unwritable --checkpoint: one line, status 2, before the first step")
endif()
