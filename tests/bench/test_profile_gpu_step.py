"""The GPU step profiler's arithmetic (bench/profile_gpu_step.py): kernels sorted into kinds by name, and busy time
as the union of kernel intervals (kernels on two streams overlap; summing them would count time twice)."""

import pytest

import profile_gpu_step as prof


@pytest.mark.parametrize("name, kind", [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "matmul"),
    ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT", "matmul"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>", "attention"),
    ("triton_per_fused__to_copy_add_native_layer_norm_0", "fused"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>", "loss"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>", "optimizer"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "other"),
])
def test_kernels_fall_into_their_kind(name, kind):
    assert prof.kind_of(name) == kind


def test_busy_time_is_the_union_of_overlapping_kernels():
    # two steps of 50 us: a and b overlap by 5 us (busy 15), c alone (5): busy 20 of 100 us -> idle 0.8
    events = [("gemm_a", 0.0, 10.0), ("gemm_b", 5.0, 10.0), ("triton_c", 30.0, 5.0)]
    r = prof.breakdown(events, wall_ms=0.1, steps=2)
    assert r["kernel_ms_per_step"] == pytest.approx(0.01)
    assert r["idle_share"] == pytest.approx(0.8)
    assert r["kinds"]["matmul"]["ms_per_step"] == pytest.approx(0.01)  # summed per kind: 20 us over 2 steps
    assert r["kinds"]["fused"]["share_of_wall"] == pytest.approx(0.05)
    assert [k["name"] for k in r["top_kernels"]] == ["gemm_a", "gemm_b", "triton_c"]
