package seccompfilter

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// label names a position in a program being assembled; labelNext is the
// instruction after a jump.
type label int

const labelNext label = -1

// assembler collects classic BPF with forward jumps to labels, resolved when
// the program is complete (a conditional jump reaches 255 instructions at
// most, which assemble checks).
type assembler struct {
	insns  []pending
	labels []int // position of each label, -1 until marked
}

type pending struct {
	insn bpf.Instruction
	// For conditional jumps: the condition, and where each outcome goes.
	jump            bool
	cond            bpf.JumpTest
	val             uint32
	onTrue, onFalse label
}

func (a *assembler) emit(i bpf.Instruction) { a.insns = append(a.insns, pending{insn: i}) }

func (a *assembler) jump(cond bpf.JumpTest, val uint32, onTrue, onFalse label) {
	a.insns = append(a.insns, pending{jump: true, cond: cond, val: val, onTrue: onTrue, onFalse: onFalse})
}

func (a *assembler) newLabel() label {
	a.labels = append(a.labels, -1)
	return label(len(a.labels) - 1)
}

func (a *assembler) mark(l label) { a.labels[l] = len(a.insns) }

func (a *assembler) assemble() ([]bpf.RawInstruction, error) {
	out := make([]bpf.Instruction, len(a.insns))
	for pos, p := range a.insns {
		if !p.jump {
			out[pos] = p.insn
			continue
		}
		t, err := a.skip(pos, p.onTrue)
		if err != nil {
			return nil, err
		}
		f, err := a.skip(pos, p.onFalse)
		if err != nil {
			return nil, err
		}
		out[pos] = bpf.JumpIf{Cond: p.cond, Val: p.val, SkipTrue: t, SkipFalse: f}
	}
	return bpf.Assemble(out)
}

// skip is how many instructions a jump at pos passes over to reach l.
func (a *assembler) skip(pos int, l label) (uint8, error) {
	if l == labelNext {
		return 0, nil
	}
	target := a.labels[l]
	if target < 0 {
		return 0, fmt.Errorf("jump at %d to a label never marked", pos)
	}
	n := target - pos - 1
	if n < 0 || n > 255 {
		return 0, fmt.Errorf("jump at %d to %d is out of a conditional jump's reach", pos, target)
	}
	return uint8(n), nil
}
