"""A small text classifier: an LSTM or a Transformer encoder over word embeddings, with Keras fit.

    python examples/text_classifier.py [--model lstm|transformer] [--epochs 3]

The data is generated: reviews of 8 to 40 words drawn from a vocabulary of 500, where 25 words
are positive and 25 negative; a review is positive when it holds more positive words than
negative ones (reviews with as many of each are left out). The sequences are padded with
``pad_sequences``; token 0 is the padding, masked by ``Embedding(mask_zero=True)`` for the LSTM.
A model that reads the words learns the rule to over 90% test accuracy in a few epochs; one that
guesses stays near 50%.
"""
import argparse
import time

import numpy as np

import hybridtf as tf

VOCABULARY = 500
POSITIVE = np.arange(1, 26)      # token ids; 0 is the padding
NEGATIVE = np.arange(26, 51)
MAX_LENGTH = 40


def make_reviews(count, seed):
    """``count`` padded reviews [count, MAX_LENGTH] (int32) and their labels (0 or 1)."""
    rng = np.random.default_rng(seed)
    reviews, labels = [], []
    while len(reviews) < count:
        length = rng.integers(8, MAX_LENGTH + 1)
        words = rng.integers(51, VOCABULARY, size=length)
        sentiment = rng.integers(0, 4, size=length)     # a word in four is a sentiment word
        words[sentiment == 0] = rng.choice(POSITIVE, size=(sentiment == 0).sum())
        words[sentiment == 1] = rng.choice(NEGATIVE, size=(sentiment == 1).sum())
        score = np.isin(words, POSITIVE).sum() - np.isin(words, NEGATIVE).sum()
        if score != 0:
            reviews.append(words)
            labels.append(int(score > 0))
    padded = tf.keras.utils.pad_sequences(reviews, maxlen=MAX_LENGTH, padding="post")
    return padded.astype(np.int32), np.array(labels, np.int32)


def lstm_model(width=32):
    inputs = tf.keras.Input(shape=(MAX_LENGTH,), dtype="int32")
    x = tf.keras.layers.Embedding(VOCABULARY, width, mask_zero=True)(inputs)
    x = tf.keras.layers.LSTM(width)(x)
    outputs = tf.keras.layers.Dense(2)(x)
    return tf.keras.Model(inputs, outputs)


class PositionEmbedding(tf.keras.layers.Layer):
    """Adds a learned embedding of each position to the token embeddings."""

    def build(self, input_shape):
        self.positions = self.add_weight(name="positions", shape=tuple(input_shape[1:]),
                                         initializer="random_normal")

    def call(self, inputs):
        return inputs + self.positions


def transformer_model(width=32, heads=2):
    inputs = tf.keras.Input(shape=(MAX_LENGTH,), dtype="int32")
    x = tf.keras.layers.Embedding(VOCABULARY, width)(inputs)
    x = PositionEmbedding()(x)
    attended = tf.keras.layers.MultiHeadAttention(num_heads=heads, key_dim=width // heads)(x, x)
    x = tf.keras.layers.LayerNormalization()(x + attended)
    hidden = tf.keras.layers.Dense(2 * width, activation="relu")(x)
    x = tf.keras.layers.LayerNormalization()(x + tf.keras.layers.Dense(width)(hidden))
    x = tf.keras.layers.GlobalAveragePooling1D()(x)
    outputs = tf.keras.layers.Dense(2)(x)
    return tf.keras.Model(inputs, outputs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("lstm", "transformer"), default="lstm")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--train", type=int, default=4000, help="training reviews")
    args = parser.parse_args()

    tf.keras.utils.set_random_seed(0)
    x_train, y_train = make_reviews(args.train, seed=1)
    x_test, y_test = make_reviews(1000, seed=2)
    model = lstm_model() if args.model == "lstm" else transformer_model()
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              validation_split=0.1, verbose=2)
    seconds = time.perf_counter() - start
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"{args.model}: test accuracy {accuracy:.3f} after {args.epochs} epochs "
          f"({seconds:.1f} s of training)")


if __name__ == "__main__":
    main()
