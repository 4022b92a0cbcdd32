#pragma once
// ---- one instruction of a pipeline stage ----
// A pipeline schedule is, for every stage, a list of instructions executed in order:
// compute (forward, backward), point-to-point traffic with the neighbouring stages
// (activations forward, gradients backward) and the end-of-step update (data-parallel
// gradient reduction, optimizer step). `chunk` is the stage's local model chunk: with
// V chunks per stage (interleaved schedules), chunk c of stage s is virtual stage
// c * P + s of the P * V virtual stages the model is cut into; without interleaving
// the chunk is always 0.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft {

/// What an instruction does.
enum class instruction_kind : std::uint8_t {
  forward,         ///< forward of (micro-batch, chunk)
  backward,        ///< backward of (micro-batch, chunk)
  send_act,        ///< send the output activation of forward(mb, chunk) to `peer`
  recv_act,        ///< receive the input activation of forward(mb, chunk) from `peer`
  send_grad,       ///< send the input gradient made by backward(mb, chunk) to `peer`
  recv_grad,       ///< receive the output gradient that backward(mb, chunk) needs from `peer`
  reduce_grads,    ///< data-parallel gradient reduction once all backwards are done
  optimizer_step,  ///< parameter update after reduce_grads
};

/// Short lower-case name ("forward", "send_act", ...).
constexpr std::string_view name_of(instruction_kind k) noexcept {
  switch (k) {
    case instruction_kind::forward: return "forward";
    case instruction_kind::backward: return "backward";
    case instruction_kind::send_act: return "send_act";
    case instruction_kind::recv_act: return "recv_act";
    case instruction_kind::send_grad: return "send_grad";
    case instruction_kind::recv_grad: return "recv_grad";
    case instruction_kind::reduce_grads: return "reduce_grads";
    case instruction_kind::optimizer_step: return "optimizer_step";
  }
  return "?";
}

/// One step of a stage's list. A literal, structural type: lists of them are constexpr values.
struct instruction {
  instruction_kind kind = instruction_kind::forward;
  std::uint16_t mb = 0;     // micro-batch
  std::uint16_t chunk = 0;  // local model chunk (virtual stage chunk * P + stage)
  std::uint16_t peer = 0;   // the other stage of a send/recv; 0 otherwise

  // ---- factories: instruction::forward(mb, chunk) reads like the schedule ----
  static constexpr instruction forward(std::size_t mb, std::size_t chunk = 0) noexcept {
    return make(instruction_kind::forward, mb, chunk, 0);
  }
  static constexpr instruction backward(std::size_t mb, std::size_t chunk = 0) noexcept {
    return make(instruction_kind::backward, mb, chunk, 0);
  }
  static constexpr instruction send_act(std::size_t mb, std::size_t chunk, std::size_t to) noexcept {
    return make(instruction_kind::send_act, mb, chunk, to);
  }
  static constexpr instruction recv_act(std::size_t mb, std::size_t chunk, std::size_t from) noexcept {
    return make(instruction_kind::recv_act, mb, chunk, from);
  }
  static constexpr instruction send_grad(std::size_t mb, std::size_t chunk, std::size_t to) noexcept {
    return make(instruction_kind::send_grad, mb, chunk, to);
  }
  static constexpr instruction recv_grad(std::size_t mb, std::size_t chunk, std::size_t from) noexcept {
    return make(instruction_kind::recv_grad, mb, chunk, from);
  }
  static constexpr instruction reduce_grads() noexcept { return make(instruction_kind::reduce_grads, 0, 0, 0); }
  static constexpr instruction optimizer_step() noexcept { return make(instruction_kind::optimizer_step, 0, 0, 0); }

  constexpr bool is_compute() const noexcept {
    return kind == instruction_kind::forward || kind == instruction_kind::backward;
  }
  constexpr bool is_send() const noexcept {
    return kind == instruction_kind::send_act || kind == instruction_kind::send_grad;
  }
  constexpr bool is_recv() const noexcept {
    return kind == instruction_kind::recv_act || kind == instruction_kind::recv_grad;
  }
  constexpr bool is_comm() const noexcept { return is_send() || is_recv(); }
  /// Activation traffic (send_act, recv_act) as opposed to gradient traffic.
  constexpr bool is_act_comm() const noexcept {
    return kind == instruction_kind::send_act || kind == instruction_kind::recv_act;
  }

  friend constexpr bool operator==(const instruction&, const instruction&) = default;

 private:
  // Indices wider than 16 bits are clamped to 0xffff, which verify() reports as out of range.
  static constexpr std::uint16_t narrow(std::size_t v) noexcept {
    return v > 0xffff ? std::uint16_t{0xffff} : static_cast<std::uint16_t>(v);
  }
  static constexpr instruction make(instruction_kind k, std::size_t mb, std::size_t chunk, std::size_t peer) noexcept {
    return instruction{k, narrow(mb), narrow(chunk), narrow(peer)};
  }
};

}  // namespace weft
