package joinerr

import (
	"errors"
	"fmt"
)

// Distinct joins errs (nil ones skipped), each distinct message once in
// the order it first came, noting how many replications failed so when
// more than one did; nil when none failed.
func Distinct(errs []error) error {
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
