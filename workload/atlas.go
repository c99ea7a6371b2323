package workload

// AtlasDocuments is the input/output length model servesim uses for the
// reference chapter's "Atlas document trace", which the chapter names but
// does not publish: prompts log-normal with mean 2,000 tokens (the chapter's
// context) and CV 0.7, clipped to [128, 7,000] so that prompt and answer
// stay within the chapter's 8,000-token sequence; answers log-normal with
// mean 250 tokens and CV 0.6, clipped to [16, 1,000]; joined by a Gaussian
// copula with rank correlation 0.4, because long documents get long
// answers. It is an assumption stated here so that a card can cite it, not
// a measurement.
func AtlasDocuments() Copula {
	in := LogNormalMean(2000, 0.7)
	in.Min, in.Max = 128, 7000
	out := LogNormalMean(250, 0.6)
	out.Min, out.Max = 16, 1000
	return Copula{Input: in, Output: out, Spearman: 0.4}
}
