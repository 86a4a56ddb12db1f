extern "C" __device__ int a_b = 1;
extern "C" __device__ int a_b_1 = 2;

extern "C" __global__ void _scale_p(int* int_, float x);

__global__ void _scale_p(int* int_, float x)
{
  {
    float x_1 = (x * 2.0f);
    {
      float x_2 = (x_1 + 1.0f);
      {
        int tmp1 = (a_b + a_b_1);
        {
          int_[0] = (tmp1 + (int)(floorf(x_2)));
        }
      }
    }
  }
}
