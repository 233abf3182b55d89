//go:build !purego

#include "textflag.h"

// func addMulVVW(z, x []uint, y uint) (carry uint)
//
// For each i: DX:AX = x[i]*y; AX += carry; z[i] += AX; carry = DX plus the
// two carry bits. x*y + z + carry < 2^128, so the carry never overflows.
// The loop count depends only on len(z).
TEXT ·addMulVVWmulq(SB), NOSPLIT, $0-64
	MOVQ z_base+0(FP), DI
	MOVQ z_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ y+48(FP), R8
	XORQ R9, R9 // carry
	XORQ BX, BX // index
	MOVQ CX, R10
	SHRQ $2, R10
	JZ   tail

loop4:
	MOVQ 0(SI)(BX*8), AX
	MULQ R8
	ADDQ R9, AX
	ADCQ $0, DX
	ADDQ AX, 0(DI)(BX*8)
	ADCQ $0, DX
	MOVQ DX, R9

	MOVQ 8(SI)(BX*8), AX
	MULQ R8
	ADDQ R9, AX
	ADCQ $0, DX
	ADDQ AX, 8(DI)(BX*8)
	ADCQ $0, DX
	MOVQ DX, R9

	MOVQ 16(SI)(BX*8), AX
	MULQ R8
	ADDQ R9, AX
	ADCQ $0, DX
	ADDQ AX, 16(DI)(BX*8)
	ADCQ $0, DX
	MOVQ DX, R9

	MOVQ 24(SI)(BX*8), AX
	MULQ R8
	ADDQ R9, AX
	ADCQ $0, DX
	ADDQ AX, 24(DI)(BX*8)
	ADCQ $0, DX
	MOVQ DX, R9

	ADDQ $4, BX
	DECQ R10
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   done

loop1:
	MOVQ 0(SI)(BX*8), AX
	MULQ R8
	ADDQ R9, AX
	ADCQ $0, DX
	ADDQ AX, 0(DI)(BX*8)
	ADCQ $0, DX
	MOVQ DX, R9
	INCQ BX
	DECQ CX
	JNZ  loop1

done:
	MOVQ R9, carry+56(FP)
	RET

// func addMulVVWadx(z, x []uint, y uint) (carry uint)
//
// The same with MULX and two independent carry chains (ADCX on CF adds the
// previous high word, ADOX on OF adds z[i]), unrolled by 8 with a one-limb
// tail. Requires BMI2 and ADX. Loop control uses MOVQ, LEAQ and JCXZQ,
// which leave CF and OF alone.
TEXT ·addMulVVWadx(SB), NOSPLIT, $0-64
	MOVQ z_base+0(FP), DI
	MOVQ z_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ y+48(FP), DX
	MOVQ CX, R12
	ANDQ $7, R12
	SHRQ $3, CX
	XORQ R9, R9 // previous high word
	TESTQ CX, CX // clears CF and OF
	JZ   adxtail

adxloop:
	MULXQ 0(SI), R10, R11
	ADCXQ R9, R10
	ADOXQ 0(DI), R10
	MOVQ  R10, 0(DI)
	MULXQ 8(SI), R10, R9
	ADCXQ R11, R10
	ADOXQ 8(DI), R10
	MOVQ  R10, 8(DI)
	MULXQ 16(SI), R10, R11
	ADCXQ R9, R10
	ADOXQ 16(DI), R10
	MOVQ  R10, 16(DI)
	MULXQ 24(SI), R10, R9
	ADCXQ R11, R10
	ADOXQ 24(DI), R10
	MOVQ  R10, 24(DI)
	MULXQ 32(SI), R10, R11
	ADCXQ R9, R10
	ADOXQ 32(DI), R10
	MOVQ  R10, 32(DI)
	MULXQ 40(SI), R10, R9
	ADCXQ R11, R10
	ADOXQ 40(DI), R10
	MOVQ  R10, 40(DI)
	MULXQ 48(SI), R10, R11
	ADCXQ R9, R10
	ADOXQ 48(DI), R10
	MOVQ  R10, 48(DI)
	MULXQ 56(SI), R10, R9
	ADCXQ R11, R10
	ADOXQ 56(DI), R10
	MOVQ  R10, 56(DI)
	LEAQ  64(SI), SI
	LEAQ  64(DI), DI
	LEAQ  -1(CX), CX
	JCXZQ adxtail
	JMP   adxloop

adxtail:
	MOVQ  R12, CX
	JCXZQ adxdone

adxtailloop:
	MULXQ 0(SI), R10, R11
	ADCXQ R9, R10
	ADOXQ 0(DI), R10
	MOVQ  R10, 0(DI)
	MOVQ  R11, R9
	LEAQ  8(SI), SI
	LEAQ  8(DI), DI
	LEAQ  -1(CX), CX
	JCXZQ adxdone
	JMP   adxtailloop

adxdone:
	MOVQ  $0, R10
	ADCXQ R10, R9
	ADOXQ R10, R9
	MOVQ  R9, carry+56(FP)
	RET
