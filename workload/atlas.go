package workload

// AtlasDocuments is the input/output length model servesim uses for the
// reference chapter's "Atlas document trace", which the chapter names but
// does not publish: prompts log-normal with mean 3,000 tokens and CV 0.8
// (clipped to [256, 16,000]), answers log-normal with mean 250 tokens and
// CV 0.6 (clipped to [16, 1,500]), joined by a Gaussian copula with rank
// correlation 0.4, because long documents get long answers. It is an
// assumption stated here so that a card can cite it, not a measurement.
func AtlasDocuments() Copula {
	in := LogNormalMean(3000, 0.8)
	in.Min, in.Max = 256, 16000
	out := LogNormalMean(250, 0.6)
	out.Min, out.Max = 16, 1500
	return Copula{Input: in, Output: out, Spearman: 0.4}
}
