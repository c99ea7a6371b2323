package costmodel_test

import (
	"fmt"
	"os"

	"github.com/servesim/servesim/costmodel"
)

// A step time from kernel profiles: read LLMServingSim's profile of
// Llama-3.1-8B on an RTX PRO 6000, declare the layer count, and price a
// decode step of a busy replica, the same step with a prompt chunk, and a
// lone prompt.
func ExampleReadProfile() {
	p, err := costmodel.ReadProfile(os.DirFS("../examples/validate/testdata/rtxpro6000-llama-3.1-8b"), "profile", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	p.Layers = 32 // Llama-3.1-8B; the profile times one layer
	m, err := p.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m)
	busy := make([]int, 128)
	for i := range busy {
		busy[i] = 400 + 10*i // contexts from 400 to 1,670 tokens
	}
	for _, b := range []costmodel.Batch{
		{Decode: busy},
		{Decode: busy[1:], Prefill: []costmodel.Chunk{{NewTokens: 1921}}},
		{Prefill: []costmodel.Chunk{{NewTokens: 2048}}},
	} {
		s := m.Price(b)
		fmt.Printf("%3d decodes, %4d prompt tokens: %6.2f ms (dense %5.2f, attention %5.2f, head %4.2f)\n",
			len(b.Decode), b.PrefillTokens(), ms(s.Time), ms(s.Dense), ms(s.Attention), ms(s.PerSequence+s.PerStep))
	}
	// Output:
	// kernel profile of meta-llama/Llama-3.1-8B on NVIDIA RTX PRO 6000 Blackwell Server Edition (vLLM 0.19.0, CUDA 13.0), 32 layers
	// 128 decodes,    0 prompt tokens:  25.61 ms (dense 11.58, attention 13.22, head 0.80)
	// 127 decodes, 1921 prompt tokens: 110.41 ms (dense 76.66, attention 32.93, head 0.83)
	//   0 decodes, 2048 prompt tokens:  82.92 ms (dense 76.66, attention  5.52, head 0.75)
}

func ms(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1e3 }
