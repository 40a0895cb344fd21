package dev.placementaudit.schemas;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlacementAlert;
import dev.placementaudit.events.PlacementIncident;
import org.apache.avro.Schema;
import org.apache.avro.specific.SpecificRecord;

import java.util.List;

/** The events of the contract, each with its generated class and its full schema history. */
public enum EventType {
    MODEL_LOADED("ModelLoaded", ModelLoaded.class, ModelLoaded.getClassSchema()),
    ALLOCATION_DECIDED("AllocationDecided", AllocationDecided.class, AllocationDecided.getClassSchema()),
    LOAD_RESOLVED("LoadResolved", LoadResolved.class, LoadResolved.getClassSchema()),
    PLACEMENT_ALERT("PlacementAlert", PlacementAlert.class, PlacementAlert.getClassSchema()),
    PLACEMENT_INCIDENT("PlacementIncident", PlacementIncident.class, PlacementIncident.getClassSchema()),
    LOAD_OBSERVED("LoadObserved", LoadObserved.class, LoadObserved.getClassSchema());

    private final String schemaName;
    private final Class<? extends SpecificRecord> recordClass;
    private final Schema currentSchema;

    EventType(String schemaName, Class<? extends SpecificRecord> recordClass, Schema currentSchema) {
        this.schemaName = schemaName;
        this.recordClass = recordClass;
        this.currentSchema = currentSchema;
    }

    public String schemaName() {
        return schemaName;
    }

    public Class<? extends SpecificRecord> recordClass() {
        return recordClass;
    }

    /** The schema the generated class reads and writes. */
    public Schema currentSchema() {
        return currentSchema;
    }

    /** Every version ever released, oldest first. */
    public List<Schema> history() {
        return SchemaHistory.versions(schemaName);
    }

    public static EventType of(Class<?> recordClass) {
        for (EventType type : values()) {
            if (type.recordClass.equals(recordClass)) {
                return type;
            }
        }
        throw new IllegalArgumentException(recordClass.getName() + " is not an event of the placement-audit contract");
    }
}
