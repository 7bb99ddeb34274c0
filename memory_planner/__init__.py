"""Static memory planning: buffers (size, lifetime) in, offsets in one arena out."""
from mcu.memory_planner.planner import (Buffer, Plan, PlanError, lower_bound, plan, plan_greedy_by_size,
                                        plan_greedy_by_breadth, plan_exact,
                                        plan_naive, verify_plan, PLANNERS)

__all__ = ["Buffer", "Plan", "PlanError", "lower_bound", "plan", "plan_greedy_by_size", "plan_naive", "plan_greedy_by_breadth", "plan_exact",
           "verify_plan", "PLANNERS"]
