package fsum_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/fsum"
)

// Sum adds in gonum's aligned order whatever the slice's address, so a
// summary's mean is the same bytes in every run.
func Example() {
	x := []float64{0.1, 0.2, 0.3, 0.4, 0.5}
	fmt.Println(fsum.Sum(x))
	mean, std := fsum.MeanStdDev(x)
	fmt.Printf("%.3f %.4f\n", mean, std)
	mean, std = fsum.PopMeanStdDev(x)
	fmt.Printf("%.3f %.4f\n", mean, std)
	// Output:
	// 1.5
	// 0.300 0.1581
	// 0.300 0.1414
}
