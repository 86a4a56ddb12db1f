// msl_shim.h: enough of the Metal Shading Language, as C++20, to compile the MSL that Chorus
// prints with g++ or clang++ on Linux and run it on the CPU (crates/chorus-metal/tests/msl_shim.rs).
//
// What it models:
//   * address spaces (`device`, `constant`, `threadgroup`, `thread`) and `kernel` are empty
//     macros; attributes (`[[buffer(0)]]`, `[[thread_position_in_threadgroup]]` …) are unknown
//     C++ attributes, ignored (-Wno-attributes). The runner rewrites two things in the text:
//     each `threadgroup T x[N];` declaration in a kernel body becomes `static T x[N];`, which is
//     one threadgroup's memory because the runner executes one threadgroup at a time; and
//     `[[threadgroup(0)]]` becomes `[[chorus_threadgroup_index(0)]]` (the attribute would
//     otherwise meet the empty `threadgroup` macro).
//   * `half` is `_Float16` (each operation rounded to half, like Apple GPUs); `bfloat` a struct
//     that rounds to nearest even after each operation; vectors are structs with MSL's sizes and
//     alignments (`float3` is 16 bytes, aligned to 16) and component-wise operators.
//   * every thread of a threadgroup is a real thread (std::thread); `threadgroup_barrier` waits
//     for every thread of the group that has not returned. SIMD-groups are 32 consecutive threads
//     (by linear index in the threadgroup). A SIMD-group function completes when no thread of
//     its SIMD-group is still running: the threads waiting in a SIMD-group function then take
//     part (the active mask), those waiting at a threadgroup barrier or returned do not.
//   * atomics are GCC's `__atomic` builtins with the order asked for (relaxed).
//
// Where MSL on a GPU and this shim can differ (keep in mind when a result differs):
//   * memory order: x86 is stronger than Apple GPUs (TSO); a kernel that races without atomics
//     or barriers may pass here and fail there.
//   * divergence: two divergent branches of one SIMD-group that both call SIMD-group functions
//     before reconverging are merged into one call here (the shim does not track call sites);
//     Apple GPUs run them one after the other.
//   * floating point: the host's rounding (round to nearest even, denormals kept; Metal may
//     flush float denormals to zero), and glibc's math functions instead of Metal's (whose
//     precision the MSL specification bounds in ulps); `fast::` functions are the precise ones.
//   * threadgroups run one after the other, so cross-threadgroup communication through device
//     memory within one dispatch (which Metal does not guarantee either) behaves differently.
//   * no limits: threadgroup memory size, threads per threadgroup and buffer counts are not
//     checked here (the Metal target's validation checks them before printing).
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace metal {

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef _Float16 half;

// bfloat: float's upper 16 bits, rounded to nearest even after every operation.
struct bfloat {
  uint16_t bits;
  bfloat() = default;
  static uint16_t round(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T> || std::is_same_v<T, half>>>
  bfloat(T v) : bits(round(float(v))) {}
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  explicit operator half() const { return half(float(*this)); }
};
inline bfloat operator+(bfloat a, bfloat b) { return bfloat(float(a) + float(b)); }
inline bfloat operator-(bfloat a, bfloat b) { return bfloat(float(a) - float(b)); }
inline bfloat operator*(bfloat a, bfloat b) { return bfloat(float(a) * float(b)); }
inline bfloat operator/(bfloat a, bfloat b) { return bfloat(float(a) / float(b)); }
inline bfloat operator-(bfloat a) { return bfloat(-float(a)); }

// Vectors with MSL's sizes and alignments.
template <typename T, int N> struct chorus_vec;
template <typename T> struct alignas(2 * sizeof(T)) chorus_vec<T, 2> {
  T x, y;
  chorus_vec() = default;
  template <typename S> explicit chorus_vec(S s) : x(T(s)), y(T(s)) {}
  template <typename A, typename B> chorus_vec(A a, B b) : x(T(a)), y(T(b)) {}
  T& operator[](int i) { return (&x)[i]; }
  T operator[](int i) const { return (&x)[i]; }
};
template <typename T> struct alignas(4 * sizeof(T)) chorus_vec<T, 3> {
  T x, y, z;
  T pad_;
  chorus_vec() = default;
  template <typename S> explicit chorus_vec(S s) : x(T(s)), y(T(s)), z(T(s)), pad_() {}
  template <typename A, typename B, typename C>
  chorus_vec(A a, B b, C c) : x(T(a)), y(T(b)), z(T(c)), pad_() {}
  T& operator[](int i) { return (&x)[i]; }
  T operator[](int i) const { return (&x)[i]; }
};
template <typename T> struct alignas(4 * sizeof(T)) chorus_vec<T, 4> {
  T x, y, z, w;
  chorus_vec() = default;
  template <typename S> explicit chorus_vec(S s) : x(T(s)), y(T(s)), z(T(s)), w(T(s)) {}
  template <typename A, typename B, typename C, typename D>
  chorus_vec(A a, B b, C c, D d) : x(T(a)), y(T(b)), z(T(c)), w(T(d)) {}
  T& operator[](int i) { return (&x)[i]; }
  T operator[](int i) const { return (&x)[i]; }
};
#define CHORUS_VEC_OP(OP)                                                                      \
  template <typename T, int N> chorus_vec<T, N> operator OP(chorus_vec<T, N> a, chorus_vec<T, N> b) \
  { chorus_vec<T, N> r = a; for (int i = 0; i < N; i++) r[i] = T(a[i] OP b[i]); return r; }   \
  template <typename T, int N, typename S, typename = std::enable_if_t<!std::is_class_v<S> || std::is_same_v<S, bfloat>>> \
  chorus_vec<T, N> operator OP(chorus_vec<T, N> a, S s)                                       \
  { chorus_vec<T, N> r = a; for (int i = 0; i < N; i++) r[i] = T(a[i] OP T(s)); return r; }  \
  template <typename T, int N, typename S, typename = std::enable_if_t<!std::is_class_v<S> || std::is_same_v<S, bfloat>>> \
  chorus_vec<T, N> operator OP(S s, chorus_vec<T, N> b)                                       \
  { chorus_vec<T, N> r = b; for (int i = 0; i < N; i++) r[i] = T(T(s) OP b[i]); return r; }
CHORUS_VEC_OP(+)
CHORUS_VEC_OP(-)
CHORUS_VEC_OP(*)
CHORUS_VEC_OP(/)
#undef CHORUS_VEC_OP
template <typename T, int N> chorus_vec<T, N> operator-(chorus_vec<T, N> a)
{ for (int i = 0; i < N; i++) a[i] = T(-a[i]); return a; }

typedef chorus_vec<int, 2> int2;
typedef chorus_vec<int, 3> int3;
typedef chorus_vec<int, 4> int4;
typedef chorus_vec<uint, 2> uint2;
typedef chorus_vec<uint, 3> uint3;
typedef chorus_vec<uint, 4> uint4;
typedef chorus_vec<half, 2> half2;
typedef chorus_vec<float, 2> float2;
typedef chorus_vec<float, 3> float3;
typedef chorus_vec<float, 4> float4;
static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "MSL's float3");
static_assert(sizeof(half2) == 4 && sizeof(int2) == 8, "MSL's vectors");

// Math: MSL's overloads over float and half.
#define CHORUS_UNARY(NAME, STD)                                                \
  inline float NAME(float x) { return STD(x); }                                \
  inline half NAME(half x) { return half(STD(float(x))); }                     \
  inline bfloat NAME(bfloat x) { return bfloat(STD(float(x))); }
CHORUS_UNARY(sin, std::sin)
CHORUS_UNARY(cos, std::cos)
CHORUS_UNARY(tan, std::tan)
CHORUS_UNARY(asin, std::asin)
CHORUS_UNARY(acos, std::acos)
CHORUS_UNARY(atan, std::atan)
CHORUS_UNARY(sinh, std::sinh)
CHORUS_UNARY(cosh, std::cosh)
CHORUS_UNARY(tanh, std::tanh)
CHORUS_UNARY(exp, std::exp)
CHORUS_UNARY(exp2, std::exp2)
CHORUS_UNARY(log, std::log)
CHORUS_UNARY(log2, std::log2)
CHORUS_UNARY(log10, std::log10)
CHORUS_UNARY(sqrt, std::sqrt)
CHORUS_UNARY(floor, std::floor)
CHORUS_UNARY(ceil, std::ceil)
CHORUS_UNARY(round, std::round)
CHORUS_UNARY(trunc, std::trunc)
CHORUS_UNARY(fabs, std::fabs)
#undef CHORUS_UNARY
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline half rsqrt(half x) { return half(1.0f / std::sqrt(float(x))); }
inline float atan2(float y, float x) { return std::atan2(y, x); }
inline float pow(float x, float y) { return std::pow(x, y); }
inline float fmod(float x, float y) { return std::fmod(x, y); }
inline half fmod(half x, half y) { return half(std::fmod(float(x), float(y))); }
inline float fmin(float x, float y) { return std::fmin(x, y); }
inline float fmax(float x, float y) { return std::fmax(x, y); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline half fma(half a, half b, half c) { return half(std::fma(float(a), float(b), float(c))); }
inline bfloat fma(bfloat a, bfloat b, bfloat c) { return bfloat(std::fma(float(a), float(b), float(c))); }
inline half2 fma(half2 a, half2 b, half2 c) { return half2(fma(a.x, b.x, c.x), fma(a.y, b.y, c.y)); }
inline float copysign(float x, float y) { return std::copysign(x, y); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool isnan(float x) { return std::isnan(x); }
inline float saturate(float x) { return std::fmin(std::fmax(x, 0.0f), 1.0f); }
template <typename T> inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T max(T a, T b) { return a < b ? b : a; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline int abs(int x) { return x < 0 ? -x : x; }
inline long abs(long x) { return x < 0 ? -x : x; }
inline short abs(short x) { return short(x < 0 ? -x : x); }
inline char abs(char x) { return char(x < 0 ? -x : x); }
inline float abs(float x) { return std::fabs(x); }
inline half abs(half x) { return x < half(0) ? half(-x) : x; }
inline bfloat abs(bfloat x) { return bfloat(std::fabs(float(x))); }
namespace fast {
inline float exp(float x) { return std::exp(x); }
inline float sin(float x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline float log(float x) { return std::log(x); }
inline float log2(float x) { return std::log2(x); }
inline float divide(float x, float y) { return x / y; }
}  // namespace fast
template <typename T> inline T clz(T x)
{ return x == 0 ? T(sizeof(T) * 8) : T(__builtin_clzll((unsigned long long)(std::make_unsigned_t<T>)x) - (64 - sizeof(T) * 8)); }
template <typename T> inline T ctz(T x)
{ return x == 0 ? T(sizeof(T) * 8) : T(__builtin_ctzll((unsigned long long)(std::make_unsigned_t<T>)x)); }
template <typename T> inline T popcount(T x)
{ return T(__builtin_popcountll((unsigned long long)(std::make_unsigned_t<T>)x)); }
inline uint reverse_bits(uint x)
{ uint r = 0; for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i); return r; }
inline ulong reverse_bits(ulong x)
{ ulong r = 0; for (int i = 0; i < 64; i++) r |= ((x >> i) & 1ul) << (63 - i); return r; }

// Memory flags, orders and scopes.
enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint(a) | uint(b)); }
enum memory_order { memory_order_relaxed, memory_order_acquire, memory_order_release,
                    memory_order_acq_rel, memory_order_seq_cst };
enum thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup,
                    thread_scope_device };
inline int chorus_gcc_order(memory_order o) {
  switch (o) {
    case memory_order_relaxed: return __ATOMIC_RELAXED;
    case memory_order_acquire: return __ATOMIC_ACQUIRE;
    case memory_order_release: return __ATOMIC_RELEASE;
    case memory_order_acq_rel: return __ATOMIC_ACQ_REL;
    default: return __ATOMIC_SEQ_CST;
  }
}
inline void atomic_thread_fence(mem_flags, memory_order o, thread_scope = thread_scope_device)
{ __atomic_thread_fence(chorus_gcc_order(o)); }

// Atomics.
template <typename T> struct atomic { T value; };
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<float> atomic_float;
template <typename T> T atomic_load_explicit(atomic<T>* a, memory_order o)
{ T v; __atomic_load(&a->value, &v, chorus_gcc_order(o)); return v; }
template <typename T> bool atomic_compare_exchange_weak_explicit(atomic<T>* a, T* expected, T desired,
                                                                 memory_order s, memory_order f)
{ return __atomic_compare_exchange(&a->value, expected, &desired, true, chorus_gcc_order(s), chorus_gcc_order(f)); }
template <typename T> T atomic_exchange_explicit(atomic<T>* a, T v, memory_order o)
{ T old; __atomic_exchange(&a->value, &v, &old, chorus_gcc_order(o)); return old; }
// Read-modify-write through compare-exchange: works for float as for integers.
template <typename T, typename F> T chorus_atomic_rmw(atomic<T>* a, F f, memory_order o) {
  T old = atomic_load_explicit(a, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(a, &old, T(f(old)), o, memory_order_relaxed)) {}
  return old;
}
template <typename T> T atomic_fetch_add_explicit(atomic<T>* a, T v, memory_order o)
{ return chorus_atomic_rmw(a, [v](T x) { return x + v; }, o); }
template <typename T> T atomic_fetch_sub_explicit(atomic<T>* a, T v, memory_order o)
{ return chorus_atomic_rmw(a, [v](T x) { return x - v; }, o); }
template <typename T> T atomic_fetch_min_explicit(atomic<T>* a, T v, memory_order o)
{ return chorus_atomic_rmw(a, [v](T x) { return v < x ? v : x; }, o); }
template <typename T> T atomic_fetch_max_explicit(atomic<T>* a, T v, memory_order o)
{ return chorus_atomic_rmw(a, [v](T x) { return x < v ? v : x; }, o); }
template <typename T> T atomic_fetch_and_explicit(atomic<T>* a, T v, memory_order o)
{ return chorus_atomic_rmw(a, [v](T x) { return x & v; }, o); }
template <typename T> T atomic_fetch_or_explicit(atomic<T>* a, T v, memory_order o)
{ return chorus_atomic_rmw(a, [v](T x) { return x | v; }, o); }
template <typename T> T atomic_fetch_xor_explicit(atomic<T>* a, T v, memory_order o)
{ return chorus_atomic_rmw(a, [v](T x) { return x ^ v; }, o); }

// ---- threadgroups and SIMD-groups: the runner's scheduling state.
namespace shim {

constexpr int kSimdWidth = 32;
enum class State { Running, AtBarrier, AtCollective, Exited };

struct Slot {
  alignas(16) unsigned char b[16];
};

struct Group {
  std::mutex m;
  std::condition_variable cv;
  int threads = 0;
  std::vector<State> state;
  std::vector<Slot> slot;  // each waiting thread's value
  unsigned long barrier_generation = 0;
  std::vector<unsigned long> simd_generation;
  std::vector<uint> simd_mask;                      // who took part in the last collective
  std::vector<std::vector<Slot>> simd_values;  // their values, by lane

  explicit Group(int n)
      : threads(n), state(n, State::Running), slot(n),
        simd_generation((n + kSimdWidth - 1) / kSimdWidth),
        simd_mask((n + kSimdWidth - 1) / kSimdWidth),
        simd_values((n + kSimdWidth - 1) / kSimdWidth, std::vector<Slot>(kSimdWidth)) {}

  // With the lock held: completes a SIMD-group function when no thread of `simd` runs.
  void try_collective(int simd) {
    int first = simd * kSimdWidth, last = std::min(threads, first + kSimdWidth);
    uint mask = 0;
    for (int t = first; t < last; t++) {
      if (state[t] == State::Running) return;
      if (state[t] == State::AtCollective) mask |= 1u << (t - first);
    }
    if (mask == 0) return;
    simd_mask[simd] = mask;
    for (int t = first; t < last; t++) {
      if (state[t] == State::AtCollective) {
        std::memcpy(simd_values[simd][t - first].b, slot[t].b, 16);
        state[t] = State::Running;
      }
    }
    simd_generation[simd]++;
    cv.notify_all();
  }

  // With the lock held: releases the barrier when every thread not returned waits at it.
  void try_barrier() {
    bool any = false;
    for (int t = 0; t < threads; t++) {
      if (state[t] == State::Exited) continue;
      if (state[t] != State::AtBarrier) return;
      any = true;
    }
    if (!any) return;
    for (int t = 0; t < threads; t++)
      if (state[t] == State::AtBarrier) state[t] = State::Running;
    barrier_generation++;
    cv.notify_all();
  }

  template <typename Pred> void wait(std::unique_lock<std::mutex>& lock, Pred done) {
    if (!cv.wait_for(lock, std::chrono::seconds(20), done)) {
      std::fprintf(stderr, "msl shim: a threadgroup made no progress for 20 s (deadlock)\n");
      std::exit(3);
    }
  }
};

struct ThreadContext {
  Group* group;
  int index;  // linear index in the threadgroup
};
inline thread_local ThreadContext context;

// Waits in a SIMD-group function with `value`; returns the values of every taking part, by
// lane, and their mask.
template <typename T> inline uint exchange(T value, T (&out)[kSimdWidth]) {
  static_assert(sizeof(T) <= 16, "a SIMD-group value fits a slot");
  Group& g = *context.group;
  int t = context.index, simd = t / kSimdWidth;
  std::unique_lock<std::mutex> lock(g.m);
  std::memcpy(g.slot[t].b, &value, sizeof(T));
  g.state[t] = State::AtCollective;
  unsigned long generation = g.simd_generation[simd];
  g.try_collective(simd);
  g.try_barrier();
  g.wait(lock, [&] { return g.simd_generation[simd] != generation; });
  for (int l = 0; l < kSimdWidth; l++) std::memcpy(&out[l], g.simd_values[simd][l].b, sizeof(T));
  return g.simd_mask[simd];
}

inline int lane() { return context.index % kSimdWidth; }

}  // namespace shim

inline void threadgroup_barrier(mem_flags) {
  shim::Group& g = *shim::context.group;
  int t = shim::context.index;
  std::unique_lock<std::mutex> lock(g.m);
  g.state[t] = shim::State::AtBarrier;
  unsigned long generation = g.barrier_generation;
  g.try_barrier();
  g.try_collective(t / shim::kSimdWidth);
  g.wait(lock, [&] { return g.barrier_generation != generation; });
}

inline void simdgroup_barrier(mem_flags) {
  int unused[shim::kSimdWidth];
  shim::exchange(0, unused);
}

template <typename T> inline T simd_shuffle(T v, ushort src) {
  T all[shim::kSimdWidth];
  uint mask = shim::exchange(v, all);
  // Reading an inactive lane is undefined in MSL; here it gives the caller's own value.
  return (src < shim::kSimdWidth && (mask >> src) & 1u) ? all[src] : v;
}

struct simd_vote {
  typedef ulong vote_t;
  vote_t v;
  explicit operator vote_t() const { return v; }
};
inline simd_vote simd_ballot(bool p) {
  bool all[shim::kSimdWidth];
  uint mask = shim::exchange(p, all);
  ulong bits = 0;
  for (int l = 0; l < shim::kSimdWidth; l++)
    if (((mask >> l) & 1u) && all[l]) bits |= 1ul << l;
  return simd_vote{bits};
}
inline simd_vote simd_active_threads_mask() {
  bool all[shim::kSimdWidth];
  return simd_vote{ulong(shim::exchange(true, all))};
}
inline bool simd_all(bool p) {
  bool all[shim::kSimdWidth];
  uint mask = shim::exchange(p, all);
  for (int l = 0; l < shim::kSimdWidth; l++)
    if (((mask >> l) & 1u) && !all[l]) return false;
  return true;
}
inline bool simd_any(bool p) {
  bool all[shim::kSimdWidth];
  uint mask = shim::exchange(p, all);
  for (int l = 0; l < shim::kSimdWidth; l++)
    if (((mask >> l) & 1u) && all[l]) return true;
  return false;
}
#define CHORUS_SIMD_REDUCE(NAME, EXPR)                                         \
  template <typename T> inline T NAME(T v) {                                   \
    T all[shim::kSimdWidth];                                                   \
    uint mask = shim::exchange(v, all);                                        \
    bool first = true;                                                         \
    T acc = v;                                                                 \
    for (int l = 0; l < shim::kSimdWidth; l++) {                               \
      if (!((mask >> l) & 1u)) continue;                                       \
      T b = all[l];                                                            \
      if (first) { acc = b; first = false; } else { T a = acc; acc = (EXPR); } \
    }                                                                          \
    return acc;                                                                \
  }
CHORUS_SIMD_REDUCE(simd_sum, T(a + b))
CHORUS_SIMD_REDUCE(simd_min, (b < a ? b : a))
CHORUS_SIMD_REDUCE(simd_max, (a < b ? b : a))
CHORUS_SIMD_REDUCE(simd_and, T(a & b))
CHORUS_SIMD_REDUCE(simd_or, T(a | b))
CHORUS_SIMD_REDUCE(simd_xor, T(a ^ b))
#undef CHORUS_SIMD_REDUCE

// ---- the runner: one dispatch, threadgroup after threadgroup.
namespace shim {

struct Position {
  uint3 thread_in_group;
  uint3 group_in_grid;
  uint3 threads_per_group;
  uint3 groups_per_grid;
  uint lane;
  uchar* dynamic_threadgroup_memory;
};

// Runs `body` for every thread of a grid of `grid` threadgroups of `block` threads, each
// threadgroup's threads as real threads; `dynamic_bytes` of zeroed threadgroup memory each.
inline void dispatch(uint3 grid, uint3 block, size_t dynamic_bytes,
                     const std::function<void(const Position&)>& body) {
  int n = int(block.x * block.y * block.z);
  std::vector<uchar> dynamic(dynamic_bytes + 16);
  for (uint gz = 0; gz < grid.z; gz++)
    for (uint gy = 0; gy < grid.y; gy++)
      for (uint gx = 0; gx < grid.x; gx++) {
        Group group(n);
        std::fill(dynamic.begin(), dynamic.end(), 0);
        std::vector<std::thread> threads;
        threads.reserve(n);
        for (int t = 0; t < n; t++) {
          threads.emplace_back([&, t] {
            context = ThreadContext{&group, t};
            Position p;
            p.thread_in_group = uint3(uint(t) % block.x, (uint(t) / block.x) % block.y,
                                      uint(t) / (block.x * block.y));
            p.group_in_grid = uint3(gx, gy, gz);
            p.threads_per_group = block;
            p.groups_per_grid = grid;
            p.lane = uint(t % kSimdWidth);
            p.dynamic_threadgroup_memory = dynamic.data();
            body(p);
            std::unique_lock<std::mutex> lock(group.m);
            group.state[t] = State::Exited;
            group.try_barrier();
            group.try_collective(t / kSimdWidth);
          });
        }
        for (auto& th : threads) th.join();
      }
}

}  // namespace shim
}  // namespace metal

// The printed prelude then defines its atomics once, not once per address space.
#define CHORUS_SHIM_ONE_ADDRESS_SPACE 1
#define kernel
#define device
#define constant
#define thread
#define threadgroup
