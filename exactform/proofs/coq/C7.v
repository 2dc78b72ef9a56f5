(** Claim C7 (docs/spec.md §3) in one dimension: the tent map t(x) = 2·ReLU(x) − 4·ReLU(x − 1/2),
    one ReLU layer of width 2, composed L times on [0, 1], has exactly 2^L linear pieces: it is
    affine with slope ±2^L on each [k/2^L, (k+1)/2^L], k < 2^L, and at every inner breakpoint
    k/2^L it is not affine on any neighbourhood (the midpoint test fails), so no two of those
    pieces merge. The number of linear regions grows exponentially with depth at width 2. *)
From Coq Require Import Reals QArith Qreals Lra Lia Arith List.
From Exactform Require Import Defs Sums C1 C3.
Import ListNotations.
Open Scope R_scope.

Definition tent (x : R) : R := 2 * relu x - 4 * relu (x - / 2).

Fixpoint tent_iter (L : nat) (x : R) : R := match L with O => x | S L => tent_iter L (tent x) end.

Lemma relu_pos : forall a, 0 <= a -> relu a = a.
Proof. intros. unfold relu, Rmax. destruct Rle_dec; lra. Qed.
Lemma relu_neg : forall a, a <= 0 -> relu a = 0.
Proof. intros. unfold relu, Rmax. destruct Rle_dec; lra. Qed.

Lemma tent_left : forall x, 0 <= x <= / 2 -> tent x = 2 * x.
Proof. intros. unfold tent. rewrite relu_pos, relu_neg by lra. ring. Qed.
Lemma tent_right : forall x, / 2 <= x -> tent x = 2 - 2 * x.
Proof. intros. unfold tent. rewrite !relu_pos by lra. field. Qed.

Lemma pow2_pos : forall L, 0 < 2 ^ L.
Proof. intros. apply pow_lt. lra. Qed.

Lemma INR_pow2 : forall L, INR (2 ^ L) = 2 ^ L.
Proof. intros. rewrite pow_INR. reflexivity. Qed.

(** The piece on [k/2^L, (k+1)/2^L]: 2^L·x − k for k even, k + 1 − 2^L·x for k odd. *)
Definition tent_piece (L k : nat) (x : R) : R :=
  if Nat.even k then 2 ^ L * x - INR k else INR k + 1 - 2 ^ L * x.

Lemma div_le : forall a b p, 0 < p -> a <= b * p -> a / p <= b.
Proof. intros. apply Rmult_le_reg_r with p; auto. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. Qed.
Lemma le_div : forall a b p, 0 < p -> a * p <= b -> a <= b / p.
Proof. intros. apply Rmult_le_reg_r with p; auto. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. Qed.
Lemma div_le_r : forall a b p, 0 < p -> a / p <= b -> a <= b * p.
Proof.
  intros. apply Rmult_le_compat_r with (r := p) in H0; [ | lra].
  unfold Rdiv in H0. rewrite Rmult_assoc, Rinv_l in H0 by lra. lra.
Qed.
Lemma le_div_r : forall a b p, 0 < p -> a <= b / p -> a * p <= b.
Proof.
  intros. apply Rmult_le_compat_r with (r := p) in H0; [ | lra].
  unfold Rdiv in H0. rewrite Rmult_assoc, Rinv_l in H0 by lra. lra.
Qed.

Theorem C7_tent_pieces : forall L k x, (k < 2 ^ L)%nat ->
  INR k / 2 ^ L <= x <= (INR k + 1) / 2 ^ L -> tent_iter L x = tent_piece L k x.
Proof.
  induction L as [|L IH]; intros k x Hk Hx.
  - simpl in Hk. replace k with O in * by lia. unfold tent_piece. simpl in *. lra.
  - pose proof (pow2_pos L) as HP. cbn [tent_iter]. cbn [pow] in Hx.
    assert (HP2 : 0 < 2 * 2 ^ L) by lra.
    destruct Hx as [Hx1 Hx2]. apply div_le_r in Hx1; auto. apply le_div_r in Hx2; auto.
    assert (H0 : 0 <= INR k) by apply pos_INR.
    destruct (Nat.ltb_spec k (2 ^ L)) as [Hlo|Hhi].
    + (* x ≤ 1/2: t(x) = 2x, the same k *)
      assert (Hkx : INR k + 1 <= 2 ^ L) by (rewrite <- INR_pow2, <- S_INR; apply le_INR; lia).
      rewrite tent_left by (split; nra).
      rewrite (IH k (2 * x) Hlo) by (split; [apply div_le | apply le_div]; auto; lra).
      unfold tent_piece. cbn [pow]. destruct (Nat.even k); ring.
    + (* x ≥ 1/2: t(x) = 2 − 2x, in piece k' = 2^(L+1) − 1 − k *)
      assert (Hk' : (k < 2 * 2 ^ L)%nat) by (rewrite Nat.pow_succ_r' in Hk; lia).
      set (k' := (2 * 2 ^ L - 1 - k)%nat).
      assert (Hk'' : (k' < 2 ^ L)%nat) by (unfold k'; lia).
      assert (Ek : INR k' = 2 * 2 ^ L - 1 - INR k).
      { unfold k'. rewrite !minus_INR by lia. rewrite mult_INR, INR_pow2. simpl. ring. }
      assert (Hkx : 2 ^ L <= INR k) by (rewrite <- INR_pow2; apply le_INR; lia).
      rewrite tent_right by nra.
      rewrite (IH k' (2 - 2 * x) Hk'') by (rewrite Ek; split; [apply div_le | apply le_div]; auto; lra).
      unfold tent_piece. cbn [pow].
      assert (Hpar : Nat.even k' = negb (Nat.even k)).
      { assert (E : (k' + k + 1 = 2 * 2 ^ L)%nat) by (unfold k'; lia).
        assert (Nat.even (k' + k + 1) = true) by (rewrite E; apply Nat.even_mul).
        rewrite Nat.even_add, Nat.even_add in H. destruct (Nat.even k'), (Nat.even k); simpl in *; auto. }
      rewrite Hpar, Ek. destruct (Nat.even k); simpl; ring.
Qed.

(** At every inner breakpoint c = k/2^L (0 < k < 2^L) the midpoint test fails with δ = 1/2^(L+1):
    f(c − δ) + f(c + δ) ≠ 2 f(c), so no affine piece contains a neighbourhood of c. *)
Theorem C7_tent_breakpoints : forall L k, (0 < k < 2 ^ L)%nat ->
  let c := INR k / 2 ^ L in let d := / 2 ^ S L in
  tent_iter L (c - d) + tent_iter L (c + d) <> 2 * tent_iter L c.
Proof.
  intros L k Hk c d. pose proof (pow2_pos L) as HP.
  assert (Pc : c * 2 ^ L = INR k) by (unfold c; field; lra).
  assert (Pd : d * 2 ^ L = / 2) by (unfold d; cbn [pow]; field; lra).
  assert (Hk1 : INR (k - 1) = INR k - 1) by (rewrite minus_INR by lia; reflexivity).
  rewrite (C7_tent_pieces L (k - 1) (c - d) ltac:(lia)) by (rewrite Hk1; split; [apply div_le | apply le_div]; auto; lra).
  rewrite (C7_tent_pieces L k (c + d) ltac:(lia)) by (split; [apply div_le | apply le_div]; auto; lra).
  rewrite (C7_tent_pieces L k c ltac:(lia)) by (split; [apply div_le | apply le_div]; auto; lra).
  unfold tent_piece. rewrite Hk1.
  assert (Hpar : Nat.even (k - 1) = negb (Nat.even k)).
  { replace k with (S (k - 1)) at 2 by lia. rewrite Nat.even_succ, <- Nat.negb_even, Bool.negb_involutive. reflexivity. }
  rewrite Hpar. destruct (Nat.even k); simpl; lra.
Qed.

(** * The tent maps as a Maxout net of width 2 and rank 2 *)

(** Layer 1: units max(x, 0) and max(x − 1/2, 0); every later layer the same of t = 2h_0 − 4h_1;
    read-out 2h_0 − 4h_1. *)
Definition tent_bias (i j : nat) : Q := if ((j =? 0) && (i =? 1))%nat then (-1 # 2)%Q else 0%Q.

Definition tent_first : layer :=
  {| units := 2; rank := fun _ => 2%nat; wt := fun _ j _ => if (j =? 0)%nat then 1%Q else 0%Q; bs := tent_bias |}.

Definition tent_next : layer :=
  {| units := 2; rank := fun _ => 2%nat;
     wt := fun _ j c => if (j =? 0)%nat then (if (c =? 0)%nat then 2%Q else (-4)%Q) else 0%Q; bs := tent_bias |}.

Definition tent_net (L : nat) : maxout :=
  {| input_dim := 1; layers := tent_first :: repeat tent_next L; outputs := 1;
     rd_w := fun _ c => if (c =? 0)%nat then 2%Q else (-4)%Q; rd_b := fun _ => 0%Q |}.

Lemma tent_iter_succ : forall L x, tent_iter (S L) x = tent (tent_iter L x).
Proof. induction L; intros; [reflexivity | ]. apply IHL. Qed.

Lemma Q2R_half : Q2R (-1 # 2) = - / 2.
Proof. unfold Q2R; simpl. field. Qed.
Lemma Q2R_2 : Q2R 2 = 2.
Proof. unfold Q2R; simpl. field. Qed.
Lemma Q2R_m4 : Q2R (-4) = -4.
Proof. unfold Q2R; simpl. field. Qed.
Lemma Q2R_0 : Q2R 0 = 0.
Proof. unfold Q2R; simpl. field. Qed.
Lemma Q2R_1 : Q2R 1 = 1.
Proof. unfold Q2R; simpl. field. Qed.
Lemma tent_bias_1 : forall i, tent_bias i 1 = 0%Q.
Proof. reflexivity. Qed.

(** A layer whose two units are max(t + b_i, 0), t an affine image of the input. *)
Lemma tent_units : forall L nin h t, units L = 2%nat -> (forall i, rank L i = 2%nat) ->
  (forall i, piece L nin h i 0 = t + Q2R (tent_bias i 0)) -> (forall i, piece L nin h i 1 = 0) ->
  layer_eval L nin h 0%nat = relu t /\ layer_eval L nin h 1%nat = relu (t - / 2).
Proof.
  intros L nin h t Hu Hr H0 H1. unfold layer_eval. rewrite !Hr. simpl. rewrite !H0, !H1.
  unfold tent_bias; simpl. rewrite Q2R_half. unfold relu, Q2R; simpl. split; f_equal; field.
Qed.

Lemma tent_next_eval : forall h t, h 0%nat = relu t -> h 1%nat = relu (t - / 2) ->
  layer_eval tent_next 2 h 0%nat = relu (tent t) /\ layer_eval tent_next 2 h 1%nat = relu (tent t - / 2).
Proof.
  intros h t E0 E1. apply tent_units; auto; intros i; unfold piece, dot; simpl.
  - rewrite E0, E1, Q2R_2, Q2R_m4. unfold tent. ring.
  - rewrite tent_bias_1, !Q2R_0. ring.
Qed.

Lemma tent_layers : forall n h t, h 0%nat = relu t -> h 1%nat = relu (t - / 2) ->
  layers_eval (repeat tent_next n) 2 h 0%nat = relu (tent_iter n t) /\
  layers_eval (repeat tent_next n) 2 h 1%nat = relu (tent_iter n t - / 2).
Proof.
  induction n as [|n IH]; intros h t E0 E1; simpl; auto.
  destruct (tent_next_eval h t E0 E1). apply IH; auto.
Qed.

Lemma tent_last_width : forall L, last_width (tent_net L) = 2%nat.
Proof.
  intros L. unfold last_width, widths, tent_net. cbn [input_dim layers map].
  induction L as [|L IH]; [reflexivity | ]. simpl in *. destruct L; [reflexivity | exact IH].
Qed.

(** The depth-(L+1) Maxout net [tent_net L] (two rank-2 units per layer) computes the (L+1)-fold
    tent map everywhere, hence has exactly 2^(L+1) linear pieces on [0, 1] (and, by
    C3_construction_computes_maxout, so has its Transformer wherever the shift constants bound
    its pieces). *)
Theorem C7_tent_net : forall L x, well_formed (tent_net L) /\ maxout_eval (tent_net L) x 0%nat = tent_iter (S L) (x 0%nat).
Proof.
  intros L x. split.
  - split; [discriminate | ]. intros Ly HL. simpl in HL. destruct HL as [<-|HL]; [simpl; split; intros; lia | ].
    apply repeat_spec in HL. subst. simpl. split; intros; lia.
  - unfold maxout_eval. rewrite tent_last_width. cbn [layers input_dim layers_eval tent_net].
    assert (F : layer_eval tent_first 1 x 0%nat = relu (x 0%nat) /\ layer_eval tent_first 1 x 1%nat = relu (x 0%nat - / 2)).
    { apply tent_units; auto; intros i; unfold piece, dot; simpl.
      - rewrite Q2R_1. ring.
      - rewrite tent_bias_1, !Q2R_0. ring. }
    destruct F as [F0 F1]. destruct (tent_layers L _ _ F0 F1) as [E0 E1].
    unfold dot; simpl. rewrite E0, E1.
    change (tent_iter L (tent (x 0%nat))) with (tent_iter (S L) (x 0%nat)).
    rewrite tent_iter_succ, Q2R_2, Q2R_m4, Q2R_0. unfold tent. ring.
Qed.
