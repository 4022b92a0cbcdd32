#pragma once
// weft/model: layers as types and the models composed from them.
#include "weft/model/attention.hpp"             // attention
#include "weft/model/bias_free_layernorm.hpp"   // bias_free_layernorm
#include "weft/model/block.hpp"                 // block
#include "weft/model/causal_attention.hpp"      // causal_attention
#include "weft/model/gelu.hpp"                  // gelu
#include "weft/model/gpt.hpp"                   // gpt, gpt_config
#include "weft/model/gemma3.hpp"                // gemma3, gemma3_config
#include "weft/model/gpt_neox.hpp"              // gpt_neox, neox_config
#include "weft/model/hyper.hpp"                 // vocab, context, width, heads, kv_heads, depth, ffn
#include "weft/model/layer.hpp"                 // layer, frame, param_info
#include "weft/model/layer_check.hpp"           // layer_check, checked_layer_t
#include "weft/model/layernorm.hpp"             // layernorm
#include "weft/model/linear.hpp"                // linear
#include "weft/model/llama.hpp"                 // llama, llama_config
#include "weft/model/lm_head.hpp"               // lm_head, tied, untied
#include "weft/model/mlp.hpp"                   // gelu_mlp, swiglu_mlp
#include "weft/model/moe.hpp"                   // moe_mlp, swiglu_experts, shared_expert, aux_loss_weight
#include "weft/model/ep_moe_mlp.hpp"            // ep_moe_mlp (expert-parallel form of moe_mlp)
#include "weft/model/moe_gpt.hpp"               // moe_gpt
#include "weft/model/moe_llama.hpp"             // moe_llama
#include "weft/model/named.hpp"                 // named
#include "weft/model/parallel_branches.hpp"     // branch_sum, parallel_branches, parallel_block
#include "weft/model/param.hpp"                 // param, param_list, role, init
#include "weft/model/positional_embedding.hpp"  // positional_embedding
#include "weft/model/qk_norm.hpp"               // qk_norm, qk_norm_attention
#include "weft/model/recompute.hpp"             // recomputed, selective_attention, recompute_model
#include "weft/model/repeat.hpp"                // repeat
#include "weft/model/residual.hpp"              // residual
#include "weft/model/rmsnorm.hpp"               // rmsnorm
#include "weft/model/rope.hpp"                  // rope, no_rope
#include "weft/model/sequential.hpp"            // sequential
#include "weft/model/embedding_scale.hpp"       // embedding_scale
#include "weft/model/swiglu.hpp"                // swiglu, geglu (gated_unit)
#include "weft/model/token_embedding.hpp"       // token_embedding
