/* SysTick as a free-running 64-bit tick counter (the board's systick_hz): start once, read anywhere. */
#ifndef MCU_SYSTICK_H
#define MCU_SYSTICK_H

#include <stdint.h>

/* Starts SysTick from zero: reload 0xFFFFFF, processor clock, wrap interrupt on. */
void mcu_systick_start(void);
/* Ticks since mcu_systick_start(); needs interrupts enabled (the wrap count is kept by SysTick_Handler). */
uint64_t mcu_systick_now(void);

#endif /* MCU_SYSTICK_H */
