// How many threads the CPU primitives may use. A process-wide setting (unlike OpenMP's own,
// which is per calling thread), so that every Python thread sees the same value.
#pragma once

namespace oneflite::ep::cpu {

// Defaults to OpenMP's maximum (OMP_NUM_THREADS, else the number of CPUs); 1 without OpenMP.
int GetNumThreads();
// n >= 1. Throws ValueError otherwise.
void SetNumThreads(int n);

}  // namespace oneflite::ep::cpu
