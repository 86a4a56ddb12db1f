extern "C" __global__ void squares(float* a, int n);

__global__ void squares(float* a, int n)
{
  {
    int limit1 = (n - 1);
    for (int i = 0; !(i > limit1); i = (i + 1)) {
      {
        float x2 = a[i];
        a[i] = (x2 * x2);
      }
    }
  }
}
