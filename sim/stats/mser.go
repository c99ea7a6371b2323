package stats

// MSER5 returns how many leading observations of y to drop: White's MSER
// rule on batch means of 5, d* = argmin over d <= m/2 of
// Σ_{j>d} (Z_j − Z̄_d)² / (m−d)², returned as 5·d*. A trailing partial
// batch is ignored. Written here because gonum has no truncation rule; the
// sums are kept incremental from the end, so it is O(n).
func MSER5(y []float64) int {
	const b = 5
	m := len(y) / b
	if m < 4 {
		return 0
	}
	z := make([]float64, m)
	for j := range z {
		for _, v := range y[j*b : (j+1)*b] {
			z[j] += v / b
		}
	}
	// Suffix sums of Z and Z² give each candidate's statistic in O(1).
	sum, sq := make([]float64, m+1), make([]float64, m+1)
	for j := m - 1; j >= 0; j-- {
		sum[j] = sum[j+1] + z[j]
		sq[j] = sq[j+1] + z[j]*z[j]
	}
	best, bestD := 0.0, 0
	for d := 0; d <= m/2; d++ {
		n := float64(m - d)
		ss := sq[d] - sum[d]*sum[d]/n // Σ (Z − mean)²
		stat := ss / (n * n)
		if d == 0 || stat < best {
			best, bestD = stat, d
		}
	}
	return b * bestD
}
