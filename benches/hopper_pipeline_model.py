"""A model of the pipeline protocol of examples/kernels/hgemm-hopper.lisp's persistent kernels
(`define-hopper-gemm-persistent`, with and without the 2-block multicast, consumers waiting
for each slice or keeping one in flight), run under random interleavings: mbarrier phases,
parities, arrival and transaction counts (try_wait.parity as PTX defines it), TMA copies that
complete later and in any order (a multicast one into both blocks), and wgmma reads that last
until a wait-group. It checks that every consumer reads the slices it expects, that no copy
lands in a stage a wgmma may still read, that every tile is computed, and that nothing
deadlocks. Also the mma.sync consumers of examples/kernels/hgemm-tma.lisp (eight warps a
block, each releasing a stage once its last fragments are loaded, then waiting for the next
slice and fetching its first step), and its cp.async producer threads (each arriving on
`full` once its own copies landed). It models the protocol, not the kernel text: change both
together.

    python3 benches/hopper_pipeline_model.py      # a few seconds; prints seven "ok" (run by .ci/run)

Written 2026-12-05, when no GPU could run the kernels; each check was seen to fail on a
mutated protocol (two arrivals per stage with multicast; releasing the current stage with one
group in flight; waiting on the wrong parity)."""
import random, sys

STAGES = 4

class Bar:
    def __init__(self, count):
        self.count = count; self.pending = count; self.tx = 0; self.phase = 0
    def _check(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1; self.pending = self.count
    def arrive(self, expect=0):
        self.tx += expect; self.pending -= 1
        assert self.pending >= 0, "too many arrivals"
        self._check()
    def complete_tx(self, n):
        self.tx -= n; self._check()
    def done(self, parity):  # try_wait.parity
        return (self.phase % 2) != parity

def run(seed, tiles_m=4, tiles_n=3, slices=6, grid=4, multicast=True, overlap=True, mma_warps=0,
        copiers=0):
    rng = random.Random(seed)
    nb = grid
    tiles = tiles_m * tiles_n
    group = 2
    def tile_of(t):
        ing = group * tiles_n; fm = (t // ing) * group; rh = min(tiles_m - fm, group); r = t % ing
        return (fm + r % rh, r // rh)
    # Arrivals that fill a stage: the TMA producer's one (with its bytes), or one from each of
    # `copiers` cp.async producer threads once its copies landed (hgemm-tma.lisp's copy-slice).
    full = [[Bar(copiers or 1) for _ in range(STAGES)] for _ in range(nb)]
    # Releasers a block: its two wgmma warpgroups, or its mma.sync warps (hgemm-tma.lisp).
    releasers = mma_warps or 2
    empty = [[Bar(releasers * (2 if multicast else 1)) for _ in range(STAGES)] for _ in range(nb)]
    smem = [[{'A': None, 'B0': None, 'B1': None} for _ in range(STAGES)] for _ in range(nb)]
    def holds(e, tm, tn, kb):
        """Stage contents `e` are slice kb of tile (tm, tn): every part, whoever copied it."""
        if copiers:
            return all(e.get(f'P{p}') == (tm, tn, kb) for p in range(copiers))
        return e['A'] == (tm, kb) and e['B0'] == (tn, kb) and e['B1'] == (tn, kb)
    reading = [[0] * STAGES for _ in range(nb)]  # active wgmma readers per stage
    events = []  # pending async completions: (fn)
    done_tiles = {}
    def peer(b): return b ^ 1

    def fill_order(b):
        """The slices block b's producer threads fill, in order, as (stage, tile row, tile
        column, kb), each once the consumers released the stage's previous slice (None while
        waiting, for the caller to pass on as a yield)."""
        it = 0
        for t in range(b, tiles, nb):
            tm, tn = tile_of(t)
            for kb in range(slices):
                s = it % STAGES
                if it >= STAGES:
                    while not empty[b][s].done(((it // STAGES) - 1) % 2):
                        yield None
                yield (s, tm, tn, kb)
                it += 1

    def producer(b):
        rank = b % 2 if multicast else 0
        for step in fill_order(b):
            if step is None:
                yield
                continue
            s, tm, tn, kb = step
            full[b][s].arrive(expect=48)
            def a_load(b=b, s=s, tm=tm, kb=kb):
                assert reading[b][s] == 0, f"A written into block {b} stage {s} under a read"
                smem[b][s]['A'] = (tm, kb); full[b][s].complete_tx(16)
            events.append(a_load)
            if multicast:
                for dst in (b, peer(b)):
                    def bl(dst=dst, s=s, tn=tn, kb=kb, rank=rank):
                        assert reading[dst][s] == 0, f"B written into block {dst} stage {s} under a read"
                        smem[dst][s][f'B{rank}'] = (tn, kb); full[dst][s].complete_tx(16)
                    events.append(bl)
            else:
                def bl(b=b, s=s, tn=tn, kb=kb):
                    assert reading[b][s] == 0
                    smem[b][s]['B0'] = (tn, kb); smem[b][s]['B1'] = (tn, kb); full[b][s].complete_tx(32)
                events.append(bl)
            yield

    def consumer(b, c):
        it = 0
        inflight = []  # stages with reads pending, oldest first
        def release(s):
            empty[b][s].arrive()
            if multicast: empty[peer(b)][s].arrive()
        def wait_group(n):
            while len(inflight) > n:
                s = inflight.pop(0)
                reading[b][s] -= 1
        for t in range(b, tiles, nb):
            tm, tn = tile_of(t)
            for kb in range(slices):
                s = it % STAGES
                while not full[b][s].done((it // STAGES) % 2):
                    yield
                e = smem[b][s]
                assert holds(e, tm, tn, kb), (b, c, it, e, tm, tn, kb)
                reading[b][s] += 1; inflight.append(s)
                yield  # wgmmas running
                if overlap:
                    wait_group(1)
                    if kb > 0:
                        release((it - 1) % STAGES)
                else:
                    wait_group(0)
                    release(s)
                it += 1
                yield
            if overlap:
                wait_group(0); release((it - 1) % STAGES)
            done_tiles[(b, c, t)] = True
            yield

    def mma_consumer(b, w):
        """A warp of hgemm-tma.lisp's `consume-tile`: ldmatrix reads are synchronous, a slice's
        four k16 steps read its stage, the last step's fragments are loaded before the release,
        and the next slice is waited for and its first step fetched before the last mma."""
        it = 0
        def release(s):
            empty[b][s].arrive()
            if multicast: empty[peer(b)][s].arrive()
        def fetch(tm, tn, kb, step):
            e = smem[b][it % STAGES]
            assert holds(e, tm, tn, kb), (b, w, it, step, e, tm, tn, kb)
        for t in range(b, tiles, nb):
            tm, tn = tile_of(t)
            while not full[b][it % STAGES].done((it // STAGES) % 2):
                yield
            reading[b][it % STAGES] += 1
            fetch(tm, tn, 0, 0)
            yield
            for kb in range(slices):
                s = it % STAGES
                for step in (1, 2, 3):
                    fetch(tm, tn, kb, step)
                    yield  # that step's mma among the fetches
                reading[b][s] -= 1
                release(s)
                if kb + 1 < slices:
                    it += 1
                    while not full[b][it % STAGES].done((it // STAGES) % 2):
                        yield
                    reading[b][it % STAGES] += 1
                    fetch(tm, tn, kb + 1, 0)
                    it -= 1
                yield  # the last step's mma
                it += 1
            done_tiles[(b, w, t)] = True
            yield

    def copier(b, p):
        """Producer thread p of hgemm-tma.lisp's cp.async producer: waits for the stage's
        release, issues its copies (they land later, in any order) and arrives on `full` when
        they have landed (cp.async.mbarrier.arrive.noinc)."""
        for step in fill_order(b):
            if step is None:
                yield
                continue
            s, tm, tn, kb = step
            def land(s=s, tm=tm, tn=tn, kb=kb):
                assert reading[b][s] == 0, f"part {p} written into block {b} stage {s} under a read"
                smem[b][s][f'P{p}'] = (tm, tn, kb)
                full[b][s].arrive()
            events.append(land)
            yield

    consumer_ids = list(range(mma_warps)) if mma_warps else [1, 2]
    threads = []
    for b in range(nb):
        if copiers:
            threads.extend(copier(b, p) for p in range(copiers))
        else:
            threads.append(producer(b))
        for c in consumer_ids:
            threads.append(mma_consumer(b, c) if mma_warps else consumer(b, c))
    alive = list(threads)
    steps = 0
    while alive or events:
        steps += 1
        if steps > 200000: raise RuntimeError("deadlock")
        if events and (not alive or rng.random() < 0.3):
            events.pop(rng.randrange(len(events)))()
            continue
        th = rng.choice(alive)
        try:
            next(th)
        except StopIteration:
            alive.remove(th)
    expected = {(b, c, t) for b in range(nb) for c in consumer_ids for t in range(b, tiles, nb)}
    assert set(done_tiles) == expected
    return steps

for multicast in (False, True):
    for overlap in (False, True):
        for seed in range(300):
            run(seed, multicast=multicast, overlap=overlap)
        print("ok", "multicast" if multicast else "single", "overlap" if overlap else "wait0")
    for seed in range(200):
        run(seed, multicast=multicast, mma_warps=8)
    print("ok", "multicast" if multicast else "single", "mma.sync warps (hgemm-tma)")
# hgemm-ws-nn: four cp.async producer threads (for the kernel's 128) and eight mma.sync warps
# (no multicast: only the TMA multicasts).
for seed in range(200):
    run(seed, multicast=False, mma_warps=8, copiers=4)
print("ok single cp.async producers (hgemm-ws-nn)")
