// The few messages of TensorBoard's event files the watch reads, from TensorFlow's event.proto,
// summary.proto, tensor.proto and tensor_shape.proto (field numbers and types as there), decoded
// with protobufjs. Fields left out (graphs, images, audio, histograms, session logs…) are skipped
// by the decoder as unknown fields, which is how "histograms, text and images are skipped" holds.
import * as protobuf from 'protobufjs/light';

const DESCRIPTOR = {
  nested: {
    tensorboard: {
      nested: {
        Event: {
          oneofs: { what: { oneof: ['file_version', 'summary'] } },
          fields: {
            wall_time: { type: 'double', id: 1 },
            step: { type: 'int64', id: 2 },
            file_version: { type: 'string', id: 3 },
            summary: { type: 'Summary', id: 5 },
          },
        },
        Summary: {
          fields: { value: { rule: 'repeated', type: 'Value', id: 1 } },
          nested: {
            Value: {
              oneofs: { value: { oneof: ['simple_value', 'tensor'] } },
              fields: {
                tag: { type: 'string', id: 1 },
                simple_value: { type: 'float', id: 2 },
                tensor: { type: 'TensorProto', id: 8 },
                metadata: { type: 'SummaryMetadata', id: 9 },
              },
            },
          },
        },
        SummaryMetadata: {
          fields: {
            plugin_data: { type: 'PluginData', id: 1 },
            data_class: { type: 'int32', id: 4 },
          },
          nested: {
            PluginData: { fields: { plugin_name: { type: 'string', id: 1 } } },
          },
        },
        TensorProto: {
          fields: {
            dtype: { type: 'int32', id: 1 },
            tensor_shape: { type: 'TensorShapeProto', id: 2 },
            tensor_content: { type: 'bytes', id: 4 },
            float_val: { rule: 'repeated', type: 'float', id: 5, options: { packed: true } },
            double_val: { rule: 'repeated', type: 'double', id: 6, options: { packed: true } },
            int_val: { rule: 'repeated', type: 'int32', id: 7, options: { packed: true } },
            int64_val: { rule: 'repeated', type: 'int64', id: 10, options: { packed: true } },
            half_val: { rule: 'repeated', type: 'int32', id: 13, options: { packed: true } },
          },
        },
        TensorShapeProto: {
          fields: { dim: { rule: 'repeated', type: 'Dim', id: 2 } },
          nested: { Dim: { fields: { size: { type: 'int64', id: 1 } } } },
        },
      },
    },
  },
};

export const EVENT_TYPES = (() => {
  const root = protobuf.Root.fromJSON(DESCRIPTOR);
  return { Event: root.lookupType('tensorboard.Event'), Summary: root.lookupType('tensorboard.Summary') };
})();

/** TensorFlow's DataType numbers of the tensors read as scalars. */
export const DT = { FLOAT: 1, DOUBLE: 2, INT32: 3, INT64: 9, BFLOAT16: 14, HALF: 19 } as const;
/** SummaryMetadata.DataClass: DATA_CLASS_SCALAR. */
export const DATA_CLASS_SCALAR = 1;

type Long = { toNumber(): number } | number;

export interface DecodedEvent {
  wall_time?: number;
  step?: Long;
  file_version?: string;
  summary?: { value?: DecodedValue[] };
}

export interface DecodedValue {
  tag?: string;
  simple_value?: number;
  tensor?: DecodedTensor;
  metadata?: { plugin_data?: { plugin_name?: string }; data_class?: number };
}

export interface DecodedTensor {
  dtype?: number;
  tensor_shape?: { dim?: Array<{ size?: Long }> };
  tensor_content?: Uint8Array;
  float_val?: number[];
  double_val?: number[];
  int_val?: number[];
  int64_val?: Long[];
  half_val?: number[];
}

export function toNumber(v: Long | undefined): number {
  return v === undefined ? 0 : typeof v === 'number' ? v : v.toNumber();
}
