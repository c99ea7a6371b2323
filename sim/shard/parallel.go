package shard

import (
	"sync"
)

// parallel calls job(i) for every i in [0, n), in order of i, on at most
// workers goroutines, and returns when every call has returned.
func parallel(workers, n int, job func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(workers, 1), n) {
		wg.Go(func() {
			for i := range next {
				job(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
