/* SysTick tick counter: the 24-bit down-counter extended to 64 bits by counting wraps in SysTick_Handler. */
#include "systick.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)

#define SYST_CSR_ENABLE_TICKINT_CPUCLK 7u
#define ICSR_PENDSTSET (1u << 26)
#define RELOAD 0xFFFFFFu

static volatile uint32_t wraps;

void SysTick_Handler(void);

void SysTick_Handler(void)
{
    wraps = wraps + 1u;
}

void mcu_systick_start(void)
{
    SYST_CSR = 0u;
    SYST_RVR = RELOAD;
    SYST_CVR = 0u; /* any write clears the counter */
    wraps = 0u;
    SYST_CSR = SYST_CSR_ENABLE_TICKINT_CPUCLK;
    /* The counter loads RELOAD on a later clock edge, without a wrap; until then 0 would read as a
     * whole elapsed period. */
    while (SYST_CVR == 0u) {
    }
}

/* A consistent (wraps, counter) pair: retry if the handler ran meanwhile; a wrap whose handler has
 * not run yet (PENDSTSET) is counted here and the counter re-read, so time never steps back. */
uint64_t mcu_systick_now(void)
{
    uint32_t w;
    uint32_t v;
    do {
        w = wraps;
        v = SYST_CVR;
        if ((SCB_ICSR & ICSR_PENDSTSET) != 0u) {
            w += 1u;
            v = SYST_CVR;
        }
    } while (w != wraps && w != wraps + 1u);
    return ((uint64_t)w << 24) + (RELOAD - v);
}
