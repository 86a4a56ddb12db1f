//! The Hopper (sm_90) operations of [`Builtin::Hopper`](super::Builtin::Hopper): warpgroup
//! matrix multiply-accumulate (`wgmma`), bulk tensor copies through tensor maps (TMA),
//! transaction-counting mbarriers, the async-proxy fence and register reallocation.
//!
//! The kernel-language names, signatures and rules are in `check/hopper.rs`; the CUDA C
//! spelling (inline PTX, modelled on CUTLASS's `cute/arch/*sm90*.hpp`) in `cfamily/hopper.rs`.

/// The element type of the A and B operands of a `wgmma.mma_async` (the accumulator is always
/// `f32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WgmmaInput {
    /// `bf16` × `bf16`, K = 16.
    BF16,
    /// `f16` × `f16`, K = 16.
    F16,
    /// `e4m3` × `e4m3` (OCP FP8), K = 32.
    E4M3,
    /// `e5m2` × `e5m2` (OCP FP8), K = 32.
    E5M2,
}

impl WgmmaInput {
    /// Every input type, in declaration order.
    pub const ALL: [WgmmaInput; 4] = [
        WgmmaInput::BF16,
        WgmmaInput::F16,
        WgmmaInput::E4M3,
        WgmmaInput::E5M2,
    ];

    /// PTX's type word (`bf16`, `e4m3`), also the suffix of the kernel-language name.
    pub fn ptx(self) -> &'static str {
        match self {
            WgmmaInput::BF16 => "bf16",
            WgmmaInput::F16 => "f16",
            WgmmaInput::E4M3 => "e4m3",
            WgmmaInput::E5M2 => "e5m2",
        }
    }

    /// The K of one instruction: 32 bytes of each row of A and B (16 for 16-bit types, 32 for
    /// 8-bit ones).
    pub fn k(self) -> u32 {
        match self {
            WgmmaInput::BF16 | WgmmaInput::F16 => 16,
            WgmmaInput::E4M3 | WgmmaInput::E5M2 => 32,
        }
    }

    /// True for the 16-bit types, the only ones whose operands may be transposed (MN-major) in
    /// shared memory.
    pub fn transposable(self) -> bool {
        matches!(self, WgmmaInput::BF16 | WgmmaInput::F16)
    }
}

/// A Hopper operation. Shared-memory operands are generic pointers into shared memory (the
/// printer converts them with `__cvta_generic_to_shared`); mbarriers are `uint64` words in
/// shared memory; a tensor map is a `tensor-map` kernel parameter, passed by its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HopperOp {
    // ---- mbarriers
    /// `mbarrier-init bar count`: `mbarrier.init.shared::cta.b64` with an arrival count.
    MbarrierInit,
    /// `mbarrier-arrive bar`: one arrival (`mbarrier.arrive.shared::cta.b64`).
    MbarrierArrive,
    /// `mbarrier-arrive-expect-tx bar bytes`: one arrival that also expects `bytes` of
    /// transactions (`mbarrier.arrive.expect_tx.shared::cta.b64`).
    MbarrierArriveExpectTx,
    /// `mbarrier-try-wait bar parity` → bool: true once the phase of that parity completed
    /// (`mbarrier.try_wait.parity.shared::cta.b64`).
    MbarrierTryWait,
    /// `mbarrier-wait bar parity`: `mbarrier-try-wait` until it succeeds.
    MbarrierWait,
    /// `mbarrier-arrive-cluster bar rank`: one arrival on the mbarrier at `bar`'s offset in
    /// the shared memory of block `rank` of the cluster (`mapa.shared::cluster` and
    /// `mbarrier.arrive.shared::cluster.b64`, release at CTA scope as CUTLASS's
    /// `ClusterBarrier::arrive(cta_id)`: a cluster-scope release costs a GPU-wide `MEMBAR`
    /// on every arrival).
    MbarrierArriveCluster,
    /// `cp-async-mbarrier-arrive bar`: an arrival on `bar` once every `cp-async` this thread
    /// issued before it has completed, counted among the arrivals `mbarrier-init` expects
    /// (`cp.async.mbarrier.arrive.noinc.shared::cta.b64`): producer threads signal a stage
    /// filled by their copies without waiting for them.
    CpAsyncMbarrierArrive,
    /// `fence-mbarrier-init`: makes this thread's `mbarrier-init`s visible to the other blocks
    /// of the cluster (and their copies) before a cluster barrier
    /// (`fence.mbarrier_init.release.cluster`).
    FenceMbarrierInit,
    /// `fence-proxy-async`: orders this thread's shared-memory accesses with the async proxy's
    /// (TMA, wgmma) (`fence.proxy.async.shared::cta`).
    FenceProxyAsync,
    /// `shared-address p` → uint: the 32-bit shared-window address of a pointer into shared
    /// memory (`__cvta_generic_to_shared`), to align buffers (the TMA wants 128 bytes, the
    /// 128-byte swizzle 1024).
    SharedAddress,
    // ---- bulk tensor copies (TMA)
    /// `tma-load-Nd dst bar tensor-map c0 … cN-1`: global → shared, completing `bar`'s
    /// transactions (`cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes`).
    /// The number is the dimension count, 1 to 5.
    TmaLoad(u8),
    /// `tma-load-Nd-multicast dst bar tensor-map cta-mask c0 … cN-1`: the same box into the
    /// same shared-memory offset of every block of the cluster whose bit is set in `cta-mask`
    /// (bit i: cluster rank i), completing the transactions on the mbarrier at `bar`'s offset
    /// in each (`….multicast::cluster`). The number is the dimension count, 1 to 5.
    TmaLoadMulticast(u8),
    /// `tma-store-Nd tensor-map src c0 … cN-1`: shared → global in a bulk async group
    /// (`cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group`).
    TmaStore(u8),
    /// `tma-store-commit`: `cp.async.bulk.commit_group`.
    BulkCommitGroup,
    /// `tma-store-wait N`: until at most `N` bulk groups are still reading their source
    /// (`cp.async.bulk.wait_group.read N`); `N` a constant.
    BulkWaitGroupRead,
    /// `prefetch-tensor-map tensor-map`: `prefetch.tensormap`.
    PrefetchTensorMap,
    // ---- warpgroup MMA
    /// `wgmma-fence`: `wgmma.fence.sync.aligned`.
    WgmmaFence,
    /// `wgmma-commit-group`: `wgmma.commit_group.sync.aligned`.
    WgmmaCommitGroup,
    /// `wgmma-wait-group N`: `wgmma.wait_group.sync.aligned N`; `N` a constant.
    WgmmaWaitGroup,
    /// `wgmma-descriptor ptr leading-bytes stride-bytes swizzle` → uint64: a shared-memory
    /// matrix descriptor; `swizzle` a constant 0, 32, 64 or 128.
    WgmmaDescriptor,
    /// `wgmma-mma-async-T acc* desc-a desc-b scale-d [transpose-a transpose-b]`:
    /// `wgmma.mma_async.sync.aligned.m64nNkK.f32.T.T`, `N` from the accumulator's type.
    WgmmaMma(WgmmaInput),
    /// `wgmma-fence-operand acc*`: an empty `asm volatile` that reads and writes every
    /// register of the accumulator, so that the compiler moves no access of it across a
    /// `wgmma-wait-group` (CUTLASS's `warpgroup_fence_operand`).
    WgmmaFenceOperand,
    /// `(wgmma-f32-m64nN)`: an accumulator of zeros.
    WgmmaAccZero,
    /// `wgmma-acc-ref acc i` → float: register `i` of an accumulator.
    WgmmaAccRef,
    // ---- register reallocation
    /// `setmaxnreg-inc N`: `setmaxnreg.inc.sync.aligned.u32 N`; `N` a constant.
    SetMaxNRegInc,
    /// `setmaxnreg-dec N`: `setmaxnreg.dec.sync.aligned.u32 N`; `N` a constant.
    SetMaxNRegDec,
}

impl HopperOp {
    /// True for the operations that need sm_90a (`wgmma`, `setmaxnreg`: PTX's "arch-specific"
    /// features, compiled with `-arch=sm_90a`; and the TMA's multicast, which ptxas 13 wants
    /// there too), as opposed to every sm_90 device's (TMA, mbarriers, fences).
    pub fn is_arch_specific(self) -> bool {
        matches!(
            self,
            HopperOp::WgmmaFence
                | HopperOp::WgmmaCommitGroup
                | HopperOp::WgmmaWaitGroup
                | HopperOp::WgmmaDescriptor
                | HopperOp::WgmmaMma(_)
                | HopperOp::WgmmaFenceOperand
                | HopperOp::WgmmaAccZero
                | HopperOp::WgmmaAccRef
                | HopperOp::SetMaxNRegInc
                | HopperOp::SetMaxNRegDec
                | HopperOp::TmaLoadMulticast(_)
        )
    }
}
