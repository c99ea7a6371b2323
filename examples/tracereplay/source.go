package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The Azure LLM inference traces share one format, so which trace a file
// holds is read from the file itself: the year from its first timestamp
// (2023-11-16 for the 2023 release, May 2024 for the 2024 one), the service
// from its name (the releases name their files AzureLLMInferenceTrace_code…
// and AzureLLMInferenceTrace_conv…). Each release has its own paper.
var azureReleases = map[string]string{
	"2023": `Patel et al., "Splitwise: Efficient generative LLM` +
		"\ninference using phase splitting\", ISCA 2024; data by Microsoft Azure, CC-BY-4.0.",
	"2024": `Stojkovic et al., "DynamoLLM: Designing LLM Inference` +
		"\nClusters for Performance and Energy Efficiency\", HPCA 2025; data by Microsoft Azure, CC-BY-4.0.",
}

// attributions are printed with the results of each other format's public
// trace.
var attributions = map[string]string{
	"mooncake": "Mooncake trace: Qin et al., \"Mooncake: Trading More Storage for Less Computation\", FAST 2025;\n" +
		"released by kvcache-ai under Apache-2.0.",
	"burstgpt": "BurstGPT trace: Wang et al., \"BurstGPT: A Real-world Workload Dataset to Optimize LLM\n" +
		"Serving Systems\", KDD 2025.",
}

// source names the trace at path and its attribution, "" when the format
// has none (generic CSV).
func source(path, format string) (string, error) {
	if format != "azure" {
		return attributions[format], nil
	}
	year, err := firstYear(path)
	if err != nil {
		return "", err
	}
	service := azureService(filepath.Base(path))
	cite, ok := azureReleases[year]
	if !ok {
		return fmt.Sprintf("Azure-format trace%s, first request in %s: not a public Azure release", service, year), nil
	}
	return fmt.Sprintf("Azure LLM inference trace %s%s: %s", year, service, cite), nil
}

// azureService is the service a file name names, in parentheses.
func azureService(name string) string {
	name = strings.ToLower(name)
	switch {
	case strings.Contains(name, "code"):
		return " (code)"
	case strings.Contains(name, "conv"):
		return " (conversation)"
	}
	return " (service not named by the file name)"
}

// firstYear is the year of the first row's TIMESTAMP in the Azure CSV at
// path (its first four characters), or "unknown".
func firstYear(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\ufeff" {
		br.Discard(3)
	}
	r := csv.NewReader(br)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return "unknown", nil // the trace reader says what is wrong
	}
	col := -1
	for i, h := range header {
		if strings.EqualFold(strings.TrimSpace(h), "TIMESTAMP") {
			col = i
		}
	}
	row, err := r.Read()
	if err != nil || col < 0 || col >= len(row) || len(row[col]) < 4 {
		return "unknown", nil // no row, or no timestamp: nothing to date
	}
	return row[col][:4], nil
}
