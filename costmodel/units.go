package costmodel

import (
	"fmt"
	"math"
)

// si formats v with a decimal prefix (k, M, G, T, P) and unit: "35 GB".
func si(v float64, unit string) string {
	for _, p := range []struct {
		f float64
		p string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= p.f {
			return fmt.Sprintf("%.4g %s%s", v/p.f, p.p, unit)
		}
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}

// binary formats a byte count with a binary prefix: "80 KiB", "4.883 GiB".
func binary(bytes float64) string {
	for _, p := range []struct {
		f float64
		p string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if math.Abs(bytes) >= p.f {
			return fmt.Sprintf("%.4g %s", bytes/p.f, p.p)
		}
	}
	return fmt.Sprintf("%.4g B", bytes)
}
