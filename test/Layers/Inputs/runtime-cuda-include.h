#include <partita/Runtime/CUDA/CudaBackend.h>
