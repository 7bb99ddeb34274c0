/* Shared Cortex-M startup: vector table, Reset_Handler and fault reporting (builds for ARMv6-M up to ARMv8.1-M).
 *
 *  - Reset_Handler turns the FPU (and with it MVE) on first when the code is built for one, then calls
 *    a separate function that copies .data, zeroes .bss and runs main, so no compiler-chosen FP/MVE
 *    instruction can run before the FPU is enabled.
 *  - main's return value becomes the semihosting exit: 0 -> success.
 *  - Every fault and unexpected exception goes to HardFault_Handler, which finds the exception frame
 *    (MSP or PSP, from EXC_RETURN bit 2), switches to its own small stack (the main one may be what
 *    broke, and the frame must stay intact until read), prints "MCU_HARDFAULT pc=0x... lr=0x...
 *    cfsr=0x..." with the stacked pc and lr and exits with failure. ARMv6-M / ARMv8-M baseline have
 *    no CFSR: "cfsr=none".
 *  - A main-stack frame outside the stack region means the stack overflowed; the frame is not read
 *    then and the line is "MCU_STACK_OVERFLOW sp=0x... cfsr=0x...".
 */
#include <stdint.h>

#include "semihost.h"

typedef void (*mcu_vector_t)(void);

extern uint32_t __stack_bottom[];
extern uint32_t __stack_top[];
extern uint32_t __data_load__[];
extern uint32_t __data_start__[];
extern uint32_t __data_end__[];
extern uint32_t __bss_start__[];
extern uint32_t __bss_end__[];

int main(void);
void Reset_Handler(void) __attribute__((noreturn));
void HardFault_Handler(void) __attribute__((naked));
void mcu_fault_report(const uint32_t *frame, uint32_t exc_return) __attribute__((noreturn, used));
void SysTick_Handler(void);

/* HardFault_Handler's own stack; the asm below hardcodes its size, 256 bytes. */
uint32_t mcu_fault_stack[64] __attribute__((aligned(8)));

/* Weak aliases: a board may override any of them. */
void NMI_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void MemManage_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void BusFault_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void UsageFault_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void SecureFault_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void SVC_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void DebugMon_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("HardFault_Handler")));

__attribute__((section(".vectors"), used)) const mcu_vector_t mcu_vectors[16] = {
    (mcu_vector_t)(uintptr_t)__stack_top,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,   /* reserved on ARMv6-M */
    BusFault_Handler,    /* reserved on ARMv6-M */
    UsageFault_Handler,  /* reserved on ARMv6-M */
    SecureFault_Handler, /* ARMv8-M only */
    0,
    0,
    0,
    SVC_Handler,
    DebugMon_Handler,
    0,
    PendSV_Handler,
    SysTick_Handler,
};

static void __attribute__((noinline, noreturn)) start_c(void)
{
    const uint32_t *src = __data_load__;
    for (uint32_t *dst = __data_start__; dst < __data_end__; ++dst) {
        *dst = *src++;
    }
    for (uint32_t *dst = __bss_start__; dst < __bss_end__; ++dst) {
        *dst = 0u;
    }
    mcu_sh_exit(main() == 0);
}

void Reset_Handler(void)
{
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    /* CPACR: full access to coprocessors 10 and 11 (the FPU and MVE). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    start_c();
}

/* r0 = exception frame, r1 = EXC_RETURN, sp = top of mcu_fault_stack, then mcu_fault_report.
 * Thumb-1 only, so it assembles for every M profile core; bl reaches anywhere in the image. */
void HardFault_Handler(void)
{
    __asm__ volatile(
        "movs r0, #4\n\t"
        "mov r1, lr\n\t"
        "tst r0, r1\n\t"
        "beq 1f\n\t"
        "mrs r0, psp\n\t"
        "b 2f\n"
        "1:\n\t"
        "mrs r0, msp\n"
        "2:\n\t"
        "ldr r2, =mcu_fault_stack + 256\n\t"
        "mov sp, r2\n\t"
        "bl mcu_fault_report\n\t"
        ".ltorg\n\t");
}

void mcu_fault_report(const uint32_t *frame, uint32_t exc_return)
{
    char line[96];
    char *p;
    int on_main_stack = (exc_return & 4u) == 0u;
    if (on_main_stack && (frame < __stack_bottom || frame + 8 > __stack_top)) {
        p = mcu_fmt_str(line, "MCU_STACK_OVERFLOW sp=");
        p = mcu_fmt_hex32(p, (uint32_t)(uintptr_t)frame);
    } else {
        p = mcu_fmt_str(line, "MCU_HARDFAULT pc=");
        p = mcu_fmt_hex32(p, frame[6]);
        p = mcu_fmt_str(p, " lr=");
        p = mcu_fmt_hex32(p, frame[5]);
    }
    p = mcu_fmt_str(p, " cfsr=");
#if __ARM_ARCH_ISA_THUMB >= 2
    p = mcu_fmt_hex32(p, *(volatile const uint32_t *)0xE000ED28u);
#else
    p = mcu_fmt_str(p, "none");
#endif
    mcu_fmt_str(p, "\n");
    mcu_sh_puts(line);
    mcu_sh_exit(0);
}
