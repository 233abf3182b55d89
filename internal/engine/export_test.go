package engine

// ParallelBatches is how many result batches workers have decrypted.
func ParallelBatches() int64 { return parallelBatches.Load() }
