extern "C" __global__ void statements(int* a, int n);

__global__ void statements(int* a, int n)
{
  for (int i = 0, j = 10; !(i >= 4); i = (i + 1), j = (j - 1)) {
    a[i] = j;
  }
  for (int k = 0; (k < n); k = (k + 2)) {
    if (k == 6) {
      break;
    } else {
      a[k] = (k * k);
    }
  }
  {
    int m = n;
    while (m > 0) {
      m = (m >> 1);
    }
  }
  switch (a[0]) {
    case 1: {
      a[1] = 10;
      break;
    }
    case 2:
    case 3: {
      a[1] = 20;
      break;
    }
    default: {
      a[1] = 30;
    }
  }
  {
    __shared__ __align__(16) float tile[16][16];
    tile[threadIdx.y][threadIdx.x] = 1.0f;
    __syncthreads();
  }
  printf("thread %d: %f\n", (int)(threadIdx.x), 0.5);
  {
    int x = 0;
    asm volatile("mov.s32 %0, 7;" : "=r"(x));
    a[2] = x;
  }
}
