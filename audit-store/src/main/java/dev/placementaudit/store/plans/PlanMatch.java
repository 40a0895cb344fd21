package dev.placementaudit.store.plans;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.schemas.PlanDigest;

import java.util.Arrays;
import java.util.List;

/**
 * Whether decisions are the plan they name, value by value: a decision that names a plan but says something else is
 * never taken as the plan (it is staged, checked by the database, and keeps its load from completing by the plan).
 */
public final class PlanMatch {
    private PlanMatch() {
    }

    /** Whether a decision carries exactly the values of the plan's tensor at its index. */
    public static boolean carries(List<Object[]> plan, AllocationDecided d) {
        int index = d.getTensorIndex();
        return index >= 0 && index < plan.size() && PlanDigest.carries(plan.get(index), d);
    }

    /** Whether a decision's values (in {@link PlanDigest#COLUMNS} order) are exactly those of the plan's tensor at its index. */
    public static boolean carries(List<Object[]> plan, int index, Object[] values) {
        return index >= 0 && index < plan.size() && Arrays.equals(plan.get(index), values);
    }

    /** The plan digest a load's decisions carry, when they all carry the same valid one; else null. */
    public static String planOf(List<AllocationDecided> load) {
        String digest = StoredPlans.carried(load.get(0).getPlanDigest());
        if (digest == null) {
            return null;
        }
        for (AllocationDecided d : load) {
            if (!digest.equals(d.getPlanDigest())) {
                return null;
            }
        }
        return digest;
    }

    /** The load's decisions in tensor order when every one of its tensors is here exactly once; else null. */
    public static List<AllocationDecided> whole(List<AllocationDecided> load) {
        int count = load.get(0).getTensorCount();
        if (load.size() != count) {
            return null;
        }
        AllocationDecided[] ordered = new AllocationDecided[count];
        for (AllocationDecided d : load) {
            int index = d.getTensorIndex();
            if (index < 0 || index >= count || ordered[index] != null || d.getTensorCount() != count) {
                return null;
            }
            ordered[index] = d;
        }
        return Arrays.asList(ordered);
    }
}
