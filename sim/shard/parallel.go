package shard

import (
	"errors"
	"fmt"
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

// joinDistinct joins errors, each distinct message once (the runs of one
// load often fail alike), noting how many runs failed so; sim's sweeps
// join the errors of their replications alike.
func joinDistinct(errs []error) error {
	var out []error
	count := map[string]int{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		if count[err.Error()]++; count[err.Error()] == 1 {
			out = append(out, err)
		}
	}
	for i, err := range out {
		if n := count[err.Error()]; n > 1 {
			out[i] = fmt.Errorf("%w (in %d replications)", err, n)
		}
	}
	return errors.Join(out...)
}
