(** Claims C2 and C3 (docs/spec.md §3) for every Maxout net: with shift constants
    R_ij ≥ |a_ij| on the layer inputs (the hypothesis a certificate's interval bounds establish),
    the hardmax Transformer [construct M Rs] computes M(x). The layer-by-layer argument is made
    once for any attention rule whose weights depend only on the scores ([construction_under_rule]:
    the construction computes the net whose units return their max head's output); hardmax is
    the instance where that output is the maximum (C1), softmax(λ) the one of C5Net.v. *)
From Coq Require Import Reals QArith Qreals Lra Lia List Arith Bool.
From Exactform Require Import Defs Sums C1.
Import ListNotations.
Open Scope R_scope.

(** Case analysis on every comparison of naturals in the goal. *)
Ltac nat_cases :=
  repeat match goal with
  | |- context [(?a =? ?b)%nat] => destruct (Nat.eqb_spec a b)
  | |- context [(?a <=? ?b)%nat] => destruct (Nat.leb_spec a b)
  | |- context [(?a <? ?b)%nat] => destruct (Nat.ltb_spec a b)
  end; try lia.

Lemma Q2R_if : forall (b : bool) p q, Q2R (if b then p else q) = if b then Q2R p else Q2R q.
Proof. destruct b; reflexivity. Qed.

Lemma Q2R0 : Q2R 0 = 0.
Proof. unfold Q2R; simpl; lra. Qed.

Lemma Q2R1 : Q2R 1 = 1.
Proof. unfold Q2R; simpl; field. Qed.

(** * States of the construction at block boundaries *)

(** Token t: the constant 1, the shift c_j = [t ≠ j], h = hv, z = zv t, out = ov. *)
Definition cstate (T N : nat) (hv : nat -> R) (zv : nat -> nat -> R) (ov : nat -> R) : state :=
  fun t r =>
    if (r =? 0)%nat then 1
    else if (r <=? T)%nat then (if (r - 1 =? t)%nat then 0 else 1)
    else if (r <=? T + N)%nat then hv (r - (1 + T))%nat
    else if (r <=? T + 2 * N)%nat then zv t (r - (1 + T + N))%nat
    else ov (r - (1 + T + 2 * N))%nat.

Section Layout.
Variables (T N : nat) (hv : nat -> R) (zv : nat -> nat -> R) (ov : nat -> R).
Let X := cstate T N hv zv ov.

Lemma cs_const : forall t, X t O = 1.
Proof. reflexivity. Qed.
Lemma cs_shift : forall t j, (j < T)%nat -> X t (c_shift j) = if (j =? t)%nat then 0 else 1.
Proof. intros. unfold X, cstate, c_shift. nat_cases; try reflexivity; f_equal; lia. Qed.
Lemma cs_h : forall t i, (i < N)%nat -> X t (c_h T i) = hv i.
Proof. intros. unfold X, cstate, c_h. nat_cases; try reflexivity; f_equal; lia. Qed.
Lemma cs_z : forall t i, (i < N)%nat -> X t (c_z T N i) = zv t i.
Proof. intros. unfold X, cstate, c_z. nat_cases; try reflexivity; f_equal; lia. Qed.
Lemma cs_out : forall t i, X t (c_out T N i) = ov i.
Proof. intros. unfold X, cstate, c_out. nat_cases; try reflexivity; f_equal; lia. Qed.
End Layout.

Lemma coord_cases : forall T N r, (r < lwidth T N)%nat ->
  r = O \/ (exists j, (j < T)%nat /\ r = c_shift j) \/ (exists i, (i < N)%nat /\ r = c_h T i)
  \/ (exists i, (i < N)%nat /\ r = c_z T N i) \/ (exists i, (i < N)%nat /\ r = c_out T N i).
Proof.
  intros. unfold lwidth, c_shift, c_h, c_z, c_out in *.
  destruct (Nat.eq_dec r 0); [left; auto | right].
  destruct (Nat.le_gt_cases r T); [left; exists (r - 1)%nat; split; lia | right].
  destruct (Nat.le_gt_cases r (T + N)); [left; exists (r - 1 - T)%nat; split; lia | right].
  destruct (Nat.le_gt_cases r (T + 2 * N)); [left; exists (r - 1 - T - N)%nat; split; lia | right].
  exists (r - 1 - T - 2 * N)%nat; split; lia.
Qed.

(** To show that a state equals a [cstate] on tokens < T and coordinates < w. *)
Definition agree (T w : nat) (X Y : state) : Prop := forall t r, (t < T)%nat -> (r < w)%nat -> X t r = Y t r.

Lemma agree_cstate : forall T N (X : state) hv zv ov,
  (forall t, (t < T)%nat -> X t O = 1) ->
  (forall t j, (t < T)%nat -> (j < T)%nat -> X t (c_shift j) = if (j =? t)%nat then 0 else 1) ->
  (forall t i, (t < T)%nat -> (i < N)%nat -> X t (c_h T i) = hv i) ->
  (forall t i, (t < T)%nat -> (i < N)%nat -> X t (c_z T N i) = zv t i) ->
  (forall t i, (t < T)%nat -> (i < N)%nat -> X t (c_out T N i) = ov i) ->
  agree T (lwidth T N) X (cstate T N hv zv ov).
Proof.
  intros T N X hv zv ov H0 H1 H2 H3 H4 t r Ht Hr.
  destruct (coord_cases T N r Hr) as [->|[[j [Hj ->]]|[[i [Hi ->]]|[[i [Hi ->]]|[i [Hi ->]]]]]].
  - rewrite H0; auto.
  - rewrite H1, cs_shift; auto.
  - rewrite H2, cs_h; auto.
  - rewrite H3, cs_z; auto.
  - rewrite H4, cs_out; auto.
Qed.

(** * Evaluation reads only tokens < T and coordinates < w *)

Lemma hardmax_ext : forall T s s' j, (forall k, (k < T)%nat -> s k = s' k) -> (j < T)%nat ->
  hardmax T s j = hardmax T s' j.
Proof.
  intros T s s' j H Hj. unfold hardmax. rewrite (vmax_ext T s s') by auto.
  rewrite (rsum_ext T (fun j => if Req_EM_T (s j) _ then 1 else 0)
                      (fun j => if Req_EM_T (s' j) (vmax T s') then 1 else 0)).
  2:{ intros. rewrite H; auto. }
  rewrite H; auto.
Qed.

Lemma agree_trans : forall T w X Y Z, agree T w X Y -> agree T w Y Z -> agree T w X Z.
Proof. unfold agree. intros. rewrite H, H0; auto. Qed.

Lemma dot_agree : forall T w (X Y : state) a t, agree T w X Y -> (t < T)%nat -> dot w a (X t) = dot w a (Y t).
Proof. intros. unfold dot. apply rsum_ext. intros. rewrite H; auto. Qed.

(** An attention rule whose weights over tokens < T depend only on the scores of tokens < T;
    hardmax is one, and so is every softmax(λ) (C5Net.v). *)
Definition rule_ext (rl : rule) : Prop :=
  forall T s s' j, (forall k, (k < T)%nat -> s k = s' k) -> (j < T)%nat -> rl T s j = rl T s' j.

Lemma hardmax_rule_ext : rule_ext hardmax.
Proof. intros T s s' j H Hj. apply hardmax_ext; auto. Qed.

Lemma block_agree_rl : forall rl, rule_ext rl -> forall T w b X Y, agree T w X Y ->
  agree T w (block_eval rl T w b X) (block_eval rl T w b Y).
Proof.
  intros rl Hext T w b X Y H t r Ht Hr. destruct b as [f|hs]; simpl.
  - unfold ff_eval. rewrite (H t r Ht Hr).
    rewrite (rsum_ext (hid f) _ (fun k => Q2R (w2 f r k) * relu (dot w (w1 f k) (Y t) + Q2R (b1 f k)))).
    reflexivity. intros. rewrite (dot_agree T w X Y); auto.
  - unfold att_eval. rewrite (H t r Ht Hr). f_equal. induction hs as [|hd hs IH]; simpl; auto.
    rewrite IH. f_equal. unfold head_eval. apply rsum_ext. intros a Ha. f_equal. apply rsum_ext.
    intros j Hj. rewrite (dot_agree T w X Y _ j H Hj). f_equal. apply Hext; auto.
    intros k Hk. unfold scores. apply rsum_ext. intros. rewrite (dot_agree T w X Y _ t), (dot_agree T w X Y _ k); auto.
Qed.

Lemma block_agree : forall T w b X Y, agree T w X Y ->
  agree T w (block_eval hardmax T w b X) (block_eval hardmax T w b Y).
Proof. apply block_agree_rl, hardmax_rule_ext. Qed.

(** * Decoding hidden-unit indices *)

Lemma div_enc : forall b q r, (r < b)%nat -> ((b * q + r) / b)%nat = q.
Proof. intros. symmetry. apply Nat.div_unique with r; lia. Qed.
Lemma mod_enc : forall b q r, (r < b)%nat -> ((b * q + r) mod b)%nat = r.
Proof. intros. symmetry. apply Nat.mod_unique with q; lia. Qed.

Lemma relu_pair : forall a, relu a - relu (- a) = a.
Proof. intros. unfold relu, Rmax. destruct Rle_dec, Rle_dec; lra. Qed.
Lemma relu_off : forall a, a <= 0 -> relu a = 0.
Proof. intros. unfold relu, Rmax. destruct Rle_dec; lra. Qed.

(** * C2: the shifted ReLU pair is the identity in its owner token and off elsewhere *)

Theorem C2_pair : forall (a Rij : R) (t j : nat), Rabs a <= Rij ->
  let c := if (j =? t)%nat then 0 else 1 in
  relu (a - Rij * c) - relu (- a - Rij * c) = if (j =? t)%nat then a else 0.
Proof.
  intros. unfold c. destruct (j =? t)%nat.
  - replace (a - Rij * 0) with a by ring. replace (- a - Rij * 0) with (- a) by ring. apply relu_pair.
  - pose proof (Rle_abs a). pose proof (Rle_abs (- a)). rewrite Rabs_Ropp in H1.
    rewrite !relu_off by lra. ring.
Qed.

(** Sums over units written at an injective coordinate map g. *)
Lemma rsum_coord_hit : forall n (g : nat -> nat) i0 f, (forall i i', g i = g i' -> i = i') ->
  rsum n (fun i => if (g i0 =? g i)%nat then f i else 0) = if (i0 <? n)%nat then f i0 else 0.
Proof.
  intros. rewrite <- rsum_single. apply rsum_ext. intros i _.
  destruct (Nat.eqb_spec (g i0) (g i)), (Nat.eqb_spec i i0); subst; auto.
  - apply H in e. lia.
  - contradiction.
Qed.

Lemma rsum_coord_miss : forall n (g : nat -> nat) r f, (forall i, (i < n)%nat -> r <> g i) ->
  rsum n (fun i => if (r =? g i)%nat then f i else 0) = 0.
Proof.
  intros. apply rsum_zero_ext. intros. destruct (Nat.eqb_spec r (g i)); auto. exfalso; eapply H; eauto.
Qed.

(** C2's other half: off the owner token both ReLUs are off, and with R_ij > 0 their
    pre-activations sum to −2R_ij < 0. *)
Theorem C2_off : forall a Rij : R, Rabs a <= Rij ->
  a - Rij <= 0 /\ - a - Rij <= 0 /\ (0 < Rij -> (a - Rij) + (- a - Rij) < 0).
Proof.
  intros. pose proof (Rle_abs a). pose proof (Rle_abs (- a)). rewrite Rabs_Ropp in H1. lra.
Qed.

(** * The pieces block *)

Section Pieces.
Variables (T N nin : nat) (L : layer) (R0 : nat -> nat -> Q) (hv : nat -> R) (ov : nat -> R).
Hypotheses (HT : (1 <= T)%nat) (Hnin : (nin <= N)%nat) (Hn : (units L <= N)%nat).
Hypothesis Hshift : forall i j, (i < units L)%nat -> (j < T)%nat ->
  Rabs (piece L nin hv i (pad (rank L i) j)) <= Q2R (R0 i j).
Let X := cstate T N hv (fun _ _ => 0) ov.
Let a i j := piece L nin hv i (pad (rank L i) j).

Lemma pieces_dot : forall t i j s, (t < T)%nat -> (j < T)%nat ->
  dot (lwidth T N) (fun c => if (c =? c_shift j)%nat then (- R0 i j)%Q
        else if in_h T nin c then (sgn s * wt L i (pad (rank L i) j) (c - (1 + T)))%Q else 0%Q) (X t)
  = - Q2R (R0 i j) * (if (j =? t)%nat then 0 else 1) + Q2R (sgn s) * dot nin (wt L i (pad (rank L i) j)) hv.
Proof.
  intros t i j s Ht Hj. unfold dot.
  rewrite (rsum_ext _ _ (fun c => (if (c =? c_shift j)%nat then - Q2R (R0 i j) * X t c else 0)
     + (if ((1 + T <=? c) && (c <? 1 + T + nin))%nat
        then Q2R (sgn s) * (Q2R (wt L i (pad (rank L i) j) (c - (1 + T))) * hv (c - (1 + T))%nat) else 0))).
  2:{ intros c Hc. unfold in_h. destruct (Nat.eqb_spec c (c_shift j)).
      - unfold c_shift in *. nat_cases; simpl; rewrite Q2R_opp; ring.
      - nat_cases; simpl; rewrite ?Q2R_mult, ?Q2R0; try ring.
        unfold X, cstate. nat_cases. replace (c - (1 + T))%nat with (c - S T)%nat by lia. ring. }
  pose proof (rsum_window (1 + T) nin (lwidth T N)
    (fun c => Q2R (sgn s) * (Q2R (wt L i (pad (rank L i) j) c) * hv c))) as W. cbv beta in W.
  rewrite rsum_plus, rsum_single, W by (unfold lwidth; lia).
  rewrite rsum_scal. unfold X. rewrite (cs_shift T N) by auto. unfold lwidth, c_shift. nat_cases; ring.
Qed.

Lemma sgn0 : Q2R (sgn 0) = 1.
Proof. unfold Q2R; simpl; lra. Qed.
Lemma sgn1 : Q2R (sgn 1) = -1.
Proof. unfold Q2R; simpl; lra. Qed.

Lemma pieces_sum : forall t r, (t < T)%nat ->
  block_eval hardmax T (lwidth T N) (pieces_block T N nin L R0) X t r
  = X t r + rsum (units L) (fun i => if (r =? c_z T N i)%nat then a i t else 0).
Proof.
  intros t r Ht. unfold pieces_block, pieces_ffb, block_eval, ff_eval. cbn [hid w1 b1 w2 b2]. cbv beta zeta.
  rewrite Q2R0, Rplus_0_r. f_equal.
  replace (2 * units L * T)%nat with (2 * (units L * T))%nat by lia.
  rewrite rsum_pairs, rsum_mul. apply rsum_ext. intros i Hi.
  rewrite (rsum_ext T _ (fun j => if (r =? c_z T N i)%nat then (if (j =? t)%nat then a i j else 0) else 0)).
  - destruct (r =? c_z T N i)%nat; [rewrite rsum_single; nat_cases; reflexivity | apply rsum_zero].
  - intros j Hj.
    assert (E0 : ((2 * (i * T + j)) / 2 = i * T + j)%nat) by (rewrite <- (Nat.add_0_r (2 * _)); apply div_enc; lia).
    assert (E1 : ((2 * (i * T + j) + 1) / 2 = i * T + j)%nat) by (apply div_enc; lia).
    assert (M0 : ((2 * (i * T + j)) mod 2 = 0)%nat) by (rewrite <- (Nat.add_0_r (2 * _)); apply mod_enc; lia).
    assert (M1 : ((2 * (i * T + j) + 1) mod 2 = 1)%nat) by (apply mod_enc; lia).
    assert (Ei : ((i * T + j) / T = i)%nat) by (rewrite Nat.mul_comm; apply div_enc; lia).
    assert (Ej : ((i * T + j) mod T = j)%nat) by (rewrite Nat.mul_comm; apply mod_enc; lia).
    rewrite E0, E1, M0, M1, Ei, Ej.
    rewrite !pieces_dot by auto. rewrite !Q2R_mult, sgn0, sgn1, !Q2R_if, sgn0, sgn1, Q2R0.
    pose proof (C2_pair (a i j) (Q2R (R0 i j)) t j (Hshift i j Hi Hj)) as P. cbv zeta in P.
    unfold a, piece in P |- *. destruct (r =? c_z T N i)%nat; [ | ring]. rewrite <- P.
    match goal with |- 1 * relu ?x1 + -1 * relu ?x2 = relu ?y1 - relu ?y2 =>
      replace x1 with y1 by ring; replace x2 with y2 by ring end. ring.
Qed.

Lemma pieces_eval :
  agree T (lwidth T N) (block_eval hardmax T (lwidth T N) (pieces_block T N nin L R0) X)
    (cstate T N hv (fun t i => if (i <? units L)%nat then a i t else 0) ov).
Proof.
  apply agree_cstate; [intros t Ht | intros t i0 Ht Hi0 ..]; rewrite pieces_sum by auto; unfold X.
  - rewrite rsum_coord_miss by (intros; unfold c_z; lia). rewrite cs_const. ring.
  - rewrite rsum_coord_miss by (intros; unfold c_z, c_shift; lia). rewrite cs_shift by auto. ring.
  - rewrite rsum_coord_miss by (intros; unfold c_z, c_h; lia). rewrite cs_h by auto. ring.
  - rewrite rsum_coord_hit by (intros i i'; unfold c_z; lia). rewrite cs_z by auto. ring.
  - rewrite rsum_coord_miss by (intros; unfold c_z, c_out; lia). rewrite cs_out by auto. ring.
Qed.
End Pieces.

Lemma ltb_true : forall a b, (a < b)%nat -> (a <? b)%nat = true.
Proof. intros. apply Nat.ltb_lt. auto. Qed.

Lemma ltb_false : forall a b, (b <= a)%nat -> (a <? b)%nat = false.
Proof. intros. apply Nat.ltb_ge. auto. Qed.

Lemma Q2Rm1 : Q2R (-1) = -1.
Proof. unfold Q2R; simpl; field. Qed.

Lemma Q2R_ind_neg : forall (b : bool) x, Q2R (if b then (-1)%Q else 0%Q) * x = if b then - x else 0.
Proof. destruct b; intros; rewrite ?Q2Rm1, ?Q2R0; ring. Qed.

Lemma dot_single : forall w k q Y, dot w (fun c => if (c =? k)%nat then q else 0%Q) Y
  = if (k <? w)%nat then Q2R q * Y k else 0.
Proof.
  intros. unfold dot. rewrite <- (rsum_single w k (fun c => Q2R q * Y c)). apply rsum_ext. intros c _.
  destruct (Nat.eqb_spec c k); subst; [reflexivity | rewrite Q2R0; ring].
Qed.

Lemma rsum_shift : forall n f, rsum (S n) f = f O + rsum n (fun i => f (S i)).
Proof. induction n; intros; cbn [rsum] in *; [ring | rewrite IHn; ring]. Qed.

Lemma fold_heads : forall (F : head -> R) g n s,
  fold_right (fun hd acc => F hd + acc) 0 (map g (seq s n)) = rsum n (fun i => F (g (s + i)%nat)).
Proof.
  induction n; intros; [reflexivity | ]. rewrite rsum_shift. simpl. rewrite IHn, Nat.add_0_r.
  f_equal. apply rsum_ext. intros. f_equal. f_equal. lia.
Qed.

(** * The max block *)

(** What a max head returns under rule rl for values v over T tokens (query the constant 1,
    key = value = v); under hardmax the maximum, by C1. *)
Definition attn (rl : rule) (T : nat) (v : nat -> R) : R := rsum T (fun j => rl T (fun k => 1 * v k + 0) j * v j).

Lemma attn_hardmax : forall T v, (1 <= T)%nat -> attn hardmax T v = vmax T v.
Proof. intros. unfold attn. apply C1_hardmax_returns_max; auto; lra. Qed.

Section Max.
Variables (rl : rule) (T N n : nat) (hh : nat -> R) (zv : nat -> nat -> R) (ov : nat -> R).
Hypotheses (Hext : rule_ext rl) (HT : (1 <= T)%nat) (Hn : (n <= N)%nat).
Let X := cstate T N hh zv ov.

Lemma max_head_eval : forall q r i, (q < T)%nat -> (i < N)%nat ->
  head_eval rl T (lwidth T N) (max_head T N i) X q r
  = if (r =? c_out T N i)%nat then attn rl T (fun t => zv t i) else 0.
Proof.
  intros q r i Hq Hi. unfold head_eval, max_head, scores. cbn [hq hv qm km vm om rsum]. unfold qind.
  rewrite !dot_single. rewrite !ltb_true by (unfold lwidth, c_z; lia). unfold X. rewrite cs_const.
  rewrite (rsum_ext T _ (fun j => rl T (fun k => 1 * zv k i + 0) j * zv j i)).
  - fold (attn rl T (fun t => zv t i)). destruct (r =? c_out T N i)%nat; rewrite ?Q2R1, ?Q2R0; ring.
  - intros j Hj. rewrite dot_single, ltb_true, (cs_z T N), Q2R1 by (unfold lwidth, c_z; lia).
    f_equal; [ | ring]. apply Hext; auto. intros k Hk.
    rewrite dot_single, ltb_true, (cs_z T N), Q2R1 by (unfold lwidth, c_z; lia). ring.
Qed.

Lemma max_eval :
  agree T (lwidth T N) (block_eval rl T (lwidth T N) (max_block T N n) X)
    (cstate T N hh zv (fun i => ov i + if (i <? n)%nat then attn rl T (fun t => zv t i) else 0)).
Proof.
  assert (S : forall q r, (q < T)%nat -> block_eval rl T (lwidth T N) (max_block T N n) X q r
            = X q r + rsum n (fun i => if (r =? c_out T N i)%nat then attn rl T (fun t => zv t i) else 0)).
  { intros q r Hq. simpl. unfold att_eval. rewrite fold_heads. f_equal. apply rsum_ext. intros.
    rewrite max_head_eval by (auto; lia). reflexivity. }
  apply agree_cstate; [intros t Ht | intros t i0 Ht Hi0 ..]; rewrite S by auto; unfold X.
  - rewrite rsum_coord_miss by (intros; unfold c_out; lia). rewrite cs_const. ring.
  - rewrite rsum_coord_miss by (intros; unfold c_out, c_shift; lia). rewrite cs_shift by auto. ring.
  - rewrite rsum_coord_miss by (intros; unfold c_out, c_h; lia). rewrite cs_h by auto. ring.
  - rewrite rsum_coord_miss by (intros; unfold c_out, c_z; lia). rewrite cs_z by auto. ring.
  - rewrite rsum_coord_hit by (intros i i'; unfold c_out; lia). rewrite cs_out by auto. ring.
Qed.
End Max.

(** * The advance block *)

Section Advance.
Variables (T N nin n : nat) (hh : nat -> R) (zv : nat -> nat -> R) (ov : nat -> R).
Hypotheses (Hnin : (nin <= N)%nat) (Hn : (n <= N)%nat).
Let X := cstate T N hh zv ov.

Lemma advance_sum : forall t r, (t < T)%nat ->
  block_eval hardmax T (lwidth T N) (advance_block T N nin n) X t r
  = X t r + rsum (nin + 2 * n) (fun p => Q2R (adv_write T N nin n p r) * X t (adv_src T N nin n p)).
Proof.
  intros t r Ht. unfold advance_block, block_eval, ff_eval. cbn [hid w1 b1 w2 b2].
  rewrite Q2R0, Rplus_0_r. f_equal. rewrite rsum_pairs. apply rsum_ext. intros p Hp.
  assert (E0 : ((2 * p) / 2 = p)%nat) by (rewrite <- (Nat.add_0_r (2 * _)); apply div_enc; lia).
  assert (E1 : ((2 * p + 1) / 2 = p)%nat) by (apply div_enc; lia).
  assert (M0 : ((2 * p) mod 2 = 0)%nat) by (rewrite <- (Nat.add_0_r (2 * _)); apply mod_enc; lia).
  assert (M1 : ((2 * p + 1) mod 2 = 1)%nat) by (apply mod_enc; lia).
  rewrite E0, E1, M0, M1, !dot_single, ltb_true.
  2:{ unfold adv_src, lwidth, c_h, c_out, c_z. nat_cases. }
  rewrite !Q2R_mult, sgn0, sgn1, ?Q2R0, ?Rplus_0_r.
  set (v := X t (adv_src T N nin n p)). set (a := Q2R (adv_write T N nin n p r)).
  replace (-1 * v) with (- v) by ring. replace (1 * v) with v by ring.
  pose proof (relu_pair v). replace (a * v) with (a * (relu v - relu (- v))) by (rewrite H; ring). ring.
Qed.

Lemma advance_parts : forall t r, (t < T)%nat ->
  rsum (nin + 2 * n) (fun p => Q2R (adv_write T N nin n p r) * X t (adv_src T N nin n p))
  = rsum nin (fun i => if (r =? c_h T i)%nat then - hh i else 0)
    + rsum n (fun i => if (r =? c_h T i)%nat then ov i else 0)
    + rsum n (fun i => if (r =? c_out T N i)%nat then - ov i else 0)
    + rsum n (fun i => if (r =? c_z T N i)%nat then - zv t i else 0).
Proof.
  intros t r Ht. set (f := fun p => Q2R (adv_write T N nin n p r) * X t (adv_src T N nin n p)).
  assert (A1 : rsum nin f = rsum nin (fun i => if (r =? c_h T i)%nat then - hh i else 0)).
  { apply rsum_ext. intros i Hi. unfold f, adv_write, adv_src. rewrite ltb_true by lia. unfold X.
    rewrite cs_h by lia. apply Q2R_ind_neg. }
  assert (A2 : rsum n (fun i => f (nin + i)%nat)
             = rsum n (fun i => (if (r =? c_h T i)%nat then ov i else 0) + (if (r =? c_out T N i)%nat then - ov i else 0))).
  { apply rsum_ext. intros i Hi. unfold f, adv_write, adv_src. rewrite ltb_false, ltb_true by lia.
    replace (nin + i - nin)%nat with i by lia. unfold X. rewrite cs_out.
    destruct (Nat.eqb_spec r (c_h T i)), (Nat.eqb_spec r (c_out T N i)); subst;
      try (unfold c_h, c_out in *; lia); rewrite ?Q2R1, ?Q2Rm1, ?Q2R0; ring. }
  assert (A3 : rsum n (fun i => f (nin + (n + i))%nat) = rsum n (fun i => if (r =? c_z T N i)%nat then - zv t i else 0)).
  { apply rsum_ext. intros i Hi. unfold f, adv_write, adv_src. rewrite !ltb_false by lia.
    replace (nin + (n + i) - nin - n)%nat with i by lia. unfold X. rewrite cs_z by lia.
    apply Q2R_ind_neg. }
  replace (nin + 2 * n)%nat with (nin + (n + n))%nat by lia. rewrite !rsum_split. cbv beta.
  rewrite A1, A2, A3, rsum_plus. ring.
Qed.

Lemma advance_eval :
  agree T (lwidth T N) (block_eval hardmax T (lwidth T N) (advance_block T N nin n) X)
    (cstate T N (fun i => (if (i <? nin)%nat then 0 else hh i) + (if (i <? n)%nat then ov i else 0))
       (fun t i => if (i <? n)%nat then 0 else zv t i) (fun i => if (i <? n)%nat then 0 else ov i)).
Proof.
  apply agree_cstate; [intros t Ht | intros t i0 Ht Hi0 ..]; rewrite advance_sum, advance_parts by auto; unfold X.
  - rewrite !rsum_coord_miss by (intros; unfold c_h, c_out, c_z; lia). rewrite cs_const. ring.
  - rewrite !rsum_coord_miss by (intros; unfold c_h, c_out, c_z, c_shift; lia). rewrite cs_shift by auto. ring.
  - rewrite (rsum_coord_miss n (c_out T N)), (rsum_coord_miss n (c_z T N)) by (intros; unfold c_h, c_out, c_z; lia).
    rewrite !rsum_coord_hit by (intros i i'; unfold c_h; lia). rewrite cs_h by auto.
    destruct (i0 <? nin)%nat, (i0 <? n)%nat; ring.
  - rewrite (rsum_coord_miss nin (c_h T)), (rsum_coord_miss n (c_h T)), (rsum_coord_miss n (c_out T N))
      by (intros; unfold c_h, c_out, c_z; lia).
    rewrite rsum_coord_hit by (intros i i'; unfold c_z; lia). rewrite cs_z by auto. destruct (i0 <? n)%nat; ring.
  - rewrite (rsum_coord_miss nin (c_h T)), (rsum_coord_miss n (c_h T)), (rsum_coord_miss n (c_z T N))
      by (intros; unfold c_h, c_out, c_z; lia).
    rewrite rsum_coord_hit by (intros i i'; unfold c_out; lia). rewrite cs_out. destruct (i0 <? n)%nat; ring.
Qed.
End Advance.

(** * One layer, then every layer *)

Definition zeroext (n : nat) (h : nat -> R) : nat -> R := fun i => if (i <? n)%nat then h i else 0.
Definition zero2 : nat -> nat -> R := fun _ _ => 0.
Definition zero1 : nat -> R := fun _ => 0.

Lemma cstate_ext : forall T N hv hv' zv zv' ov ov',
  (forall i, (i < N)%nat -> hv i = hv' i) -> (forall t i, (t < T)%nat -> (i < N)%nat -> zv t i = zv' t i) ->
  (forall i, (i < N)%nat -> ov i = ov' i) ->
  agree T (lwidth T N) (cstate T N hv zv ov) (cstate T N hv' zv' ov').
Proof.
  intros. apply agree_cstate; intros.
  - apply cs_const.
  - apply cs_shift; auto.
  - rewrite cs_h; auto.
  - rewrite cs_z; auto.
  - rewrite cs_out; auto.
Qed.

(** Padding ranks to T by repeating the last piece leaves the maximum unchanged. *)
Lemma vmax_pad : forall T k f, (1 <= k <= T)%nat -> vmax T (fun j => f (pad k j)) = vmax k f.
Proof.
  intros T k f Hk. unfold pad. apply Rle_antisym.
  - apply vmax_le; [lia | ]. intros. apply vmax_ge. lia.
  - apply vmax_le; [lia | ]. intros j Hj. replace j with (Nat.min j (k - 1)) at 1 by lia.
    apply (vmax_ge T (fun j => f (Nat.min j (k - 1)))). lia.
Qed.

Lemma piece_zeroext : forall L nin h i j, piece L nin (zeroext nin h) i j = piece L nin h i j.
Proof.
  intros. unfold piece, dot. f_equal. apply rsum_ext. intros c Hc. unfold zeroext. rewrite ltb_true; auto.
Qed.

(** One layer under rule rl: the three blocks turn h into [step L nin h], for any [step] that is,
    unit by unit, what the max head returns on the padded pieces. *)
Definition step_ok (rl : rule) (T : nat) (step : layer -> nat -> (nat -> R) -> nat -> R) : Prop :=
  forall L nin h i, (i < units L)%nat -> (1 <= rank L i <= T)%nat ->
    step L nin h i = attn rl T (fun t => piece L nin h i (pad (rank L i) t)).

(** The layers of a net run by [step] (for [layer_eval], [layers_eval]: [run_layer_eval]). *)
Fixpoint run (step : layer -> nat -> (nat -> R) -> nat -> R) (ls : list layer) (nin : nat) (h : nat -> R) : nat -> R :=
  match ls with [] => h | L :: ls => run step ls (units L) (step L nin h) end.

Lemma run_layer_eval : forall ls nin h, run layer_eval ls nin h = layers_eval ls nin h.
Proof. induction ls; intros; simpl; auto. Qed.

Section Layer.
Variables (rl : rule) (T N : nat) (Rs : shifts) (step : layer -> nat -> (nat -> R) -> nat -> R).
Hypotheses (Hext : rule_ext rl) (HT : (1 <= T)%nat) (Hstep : step_ok rl T step).

Lemma layer_correct : forall l L nin h X,
  (nin <= N)%nat -> (units L <= N)%nat -> (forall i, (i < units L)%nat -> (1 <= rank L i <= T)%nat) ->
  (forall i j, (i < units L)%nat -> (j < T)%nat -> Rabs (piece L nin h i (pad (rank L i) j)) <= Q2R (Rs l i j)) ->
  agree T (lwidth T N) X (cstate T N (zeroext nin h) zero2 zero1) ->
  agree T (lwidth T N)
    (blocks_eval rl T (lwidth T N) [pieces_block T N nin L (Rs l); max_block T N (units L); advance_block T N nin (units L)] X)
    (cstate T N (zeroext (units L) (step L nin h)) zero2 zero1).
Proof.
  intros l L nin h X Hnin Hn Hr Hs HX. cbn [blocks_eval]. set (w := lwidth T N).
  (* pieces: a feed-forward block, the same under every rule *)
  set (zv1 := fun t i => if (i <? units L)%nat then piece L nin (zeroext nin h) i (pad (rank L i) t) else 0).
  assert (S1 : agree T w (block_eval rl T w (pieces_block T N nin L (Rs l)) X) (cstate T N (zeroext nin h) zv1 zero1)).
  { eapply agree_trans; [apply block_agree_rl, HX; auto | ].
    exact (pieces_eval T N nin L (Rs l) (zeroext nin h) zero1 HT Hnin Hn
             (fun i j Hi Hj => eq_ind_r (fun v => Rabs v <= _) (Hs i j Hi Hj) (piece_zeroext L nin h i _))). }
  (* max *)
  set (ov2 := fun i => zero1 i + (if (i <? units L)%nat then attn rl T (fun t => zv1 t i) else 0)).
  assert (S2 : agree T w (block_eval rl T w (max_block T N (units L)) (block_eval rl T w (pieces_block T N nin L (Rs l)) X))
                 (cstate T N (zeroext nin h) zv1 ov2)).
  { eapply agree_trans; [apply block_agree_rl, S1; auto | ]. apply max_eval; auto. }
  (* advance: a feed-forward block *)
  eapply agree_trans; [apply block_agree_rl, S2; auto | ].
  eapply agree_trans; [exact (advance_eval T N nin (units L) (zeroext nin h) zv1 ov2 Hnin Hn) | ].
  apply cstate_ext; intros.
  - unfold zeroext, ov2, zero1. destruct (Nat.ltb_spec i (units L)).
    2:{ destruct (i <? nin)%nat; ring. }
    rewrite Hstep by auto.
    transitivity (attn rl T (fun t => zv1 t i)); [destruct (i <? nin)%nat; ring | ].
    unfold attn. apply rsum_ext. intros t Ht. unfold zv1; cbv beta. rewrite ltb_true, piece_zeroext by auto.
    f_equal. apply Hext; auto. intros k Hk. rewrite piece_zeroext. reflexivity.
  - unfold zv1, zero2. destruct (Nat.ltb_spec i (units L)); reflexivity.
  - unfold ov2, zero1. destruct (Nat.ltb_spec i (units L)); ring.
Qed.

(** The shift constants bound the pieces along the trajectory of [step]. *)
Fixpoint shifts_along (l nin : nat) (ls : list layer) (h : nat -> R) : Prop :=
  match ls with
  | [] => True
  | L :: ls => (forall i j, (i < units L)%nat -> (j < T)%nat -> Rabs (piece L nin h i (pad (rank L i) j)) <= Q2R (Rs l i j))
               /\ shifts_along (S l) (units L) ls (step L nin h)
  end.

Lemma layers_correct_along : forall ls l nin h X,
  (nin <= N)%nat -> (forall L, In L ls -> (units L <= N)%nat /\ forall i, (i < units L)%nat -> (1 <= rank L i <= T)%nat) ->
  shifts_along l nin ls h ->
  agree T (lwidth T N) X (cstate T N (zeroext nin h) zero2 zero1) ->
  agree T (lwidth T N) (blocks_eval rl T (lwidth T N) (layer_blocks T N l nin ls Rs) X)
    (cstate T N (zeroext (last (nin :: map units ls) O) (run step ls nin h)) zero2 zero1).
Proof.
  induction ls as [|L ls IH]; intros l nin h X Hnin Hls Hs HX; cbn [layer_blocks blocks_eval run map]; auto.
  destruct Hs as [Hs Hs']. destruct (Hls L (or_introl eq_refl)) as [Hn Hr].
  pose proof (layer_correct l L nin h X Hnin Hn Hr Hs HX) as HL. cbn [blocks_eval] in HL.
  replace (last (nin :: units L :: map units ls) O) with (last (units L :: map units ls) O) by reflexivity.
  apply IH; auto. intros; apply Hls; right; auto.
Qed.
End Layer.

(** Hardmax: the step is the Maxout layer itself. *)
Lemma layer_eval_step_ok : forall T, (1 <= T)%nat -> step_ok hardmax T layer_eval.
Proof.
  intros T HT L nin h i Hi Hr. unfold layer_eval. rewrite attn_hardmax by auto.
  symmetry. apply vmax_pad. auto.
Qed.

Fixpoint shifts_hold (T : nat) (Rs : shifts) (l nin : nat) (ls : list layer) (h : nat -> R) : Prop :=
  match ls with
  | [] => True
  | L :: ls => (forall i j, (i < units L)%nat -> (j < T)%nat -> Rabs (piece L nin h i (pad (rank L i) j)) <= Q2R (Rs l i j))
               /\ shifts_hold T Rs (S l) (units L) ls (layer_eval L nin h)
  end.

Lemma shifts_hold_along : forall T Rs ls l nin h, shifts_hold T Rs l nin ls h -> shifts_along T Rs layer_eval l nin ls h.
Proof. induction ls as [|L ls IH]; intros l nin h H; simpl in *; auto. destruct H. split; auto. Qed.

Lemma layers_correct : forall T N Rs, (1 <= T)%nat -> forall ls l nin h X,
  (nin <= N)%nat -> (forall L, In L ls -> (units L <= N)%nat /\ forall i, (i < units L)%nat -> (1 <= rank L i <= T)%nat) ->
  shifts_hold T Rs l nin ls h ->
  agree T (lwidth T N) X (cstate T N (zeroext nin h) zero2 zero1) ->
  agree T (lwidth T N) (blocks_eval hardmax T (lwidth T N) (layer_blocks T N l nin ls Rs) X)
    (cstate T N (zeroext (last (nin :: map units ls) O) (layers_eval ls nin h)) zero2 zero1).
Proof.
  intros. rewrite <- run_layer_eval. apply layers_correct_along; auto.
  - apply hardmax_rule_ext.
  - apply layer_eval_step_ok; auto.
  - apply shifts_hold_along; auto.
Qed.

(** * The embedding, the read-out and the theorem *)

Lemma embed_correct : forall M Rs x,
  let T := max_rank M in let N := max_width M in
  (input_dim M <= N)%nat ->
  agree T (lwidth T N) (embed (construct M Rs) x) (cstate T N (zeroext (input_dim M) x) zero2 zero1).
Proof.
  intros M Rs x T N Hd. unfold embed, construct. cbn [tin emb_w emb_b]. fold T N.
  apply agree_cstate; [intros t Ht | intros t i0 Ht Hi0 ..]; unfold dot.
  - rewrite rsum_zero_ext; [unfold Q2R; simpl; field | ].
    intros i Hi. unfold qind, c_h. destruct (Nat.eqb_spec 0 (1 + T + i)); [lia | rewrite Q2R0; ring].
  - rewrite rsum_zero_ext.
    + unfold c_shift. nat_cases; simpl; rewrite ?Q2R0, ?Q2R1; ring.
    + intros i Hi. unfold qind, c_h, c_shift. destruct (Nat.eqb_spec (1 + i0) (1 + T + i)); [lia | rewrite Q2R0; ring].
  - rewrite (rsum_ext _ _ (fun i => if (i =? i0)%nat then x i else 0)).
    + rewrite rsum_single. unfold zeroext, c_h. nat_cases; rewrite Q2R0; ring.
    + intros i Hi. unfold qind, c_h. nat_cases; rewrite ?Q2R0, ?Q2R1; try ring; subst; reflexivity.
  - rewrite rsum_zero_ext.
    + unfold c_z. nat_cases. rewrite Q2R0. unfold zero2. ring.
    + intros i Hi. unfold qind, c_h, c_z. nat_cases. rewrite Q2R0; ring.
  - rewrite rsum_zero_ext.
    + unfold c_out. nat_cases. rewrite Q2R0. unfold zero1. ring.
    + intros i Hi. unfold qind, c_h, c_out. nat_cases. rewrite Q2R0; ring.
Qed.

Lemma fold_max_ge : forall l x, In x l -> (x <= fold_right Nat.max 0 l)%nat.
Proof. induction l; simpl; intros; [contradiction | destruct H; subst; [lia | specialize (IHl x H); lia]]. Qed.

Lemma last_in : forall (l : list nat) d, l <> [] -> In (last l d) l.
Proof.
  induction l as [|a l IH]; intros d H; [contradiction | ].
  destruct l as [|b l]; [left; reflexivity | right; apply IH; discriminate].
Qed.

(** Spec §1: at least one layer, every layer at least one unit, every unit at least one piece. *)
Definition well_formed (M : maxout) : Prop :=
  layers M <> [] /\
  forall L, In L (layers M) -> (1 <= units L)%nat /\ forall i, (i < units L)%nat -> (1 <= rank L i)%nat.

(** The hypothesis on the shift constants at input x: in every layer ℓ, for every unit i and
    slot j < T, |a_{i,pad(j)}(h^{ℓ−1}(x))| ≤ R_ℓij — what interval bounds over the box establish. *)
Definition shifts_bound (M : maxout) (Rs : shifts) (x : nat -> R) : Prop :=
  shifts_hold (max_rank M) Rs 0 (input_dim M) (layers M) x.

(** What [well_formed] gives: T ≥ 1, every width ≤ N, every rank in 1..T. *)
Lemma wf_facts : forall M, well_formed M ->
  (1 <= max_rank M)%nat /\ (forall n, In n (widths M) -> (n <= max_width M)%nat) /\
  forall L, In L (layers M) -> (units L <= max_width M)%nat /\
    forall i, (i < units L)%nat -> (1 <= rank L i <= max_rank M)%nat.
Proof.
  intros M [Hne Hwf].
  assert (HN : forall n, In n (widths M) -> (n <= max_width M)%nat) by (intros; apply fold_max_ge; auto).
  assert (Hls : forall L, In L (layers M) -> (units L <= max_width M)%nat /\
                  forall i, (i < units L)%nat -> (1 <= rank L i <= max_rank M)%nat).
  { intros L HL. split; [apply HN; right; apply in_map; auto | ].
    intros i Hi. split; [apply Hwf; auto | ].
    apply Nat.le_trans with (layer_rank L).
    - apply fold_max_ge, in_map, in_seq. lia.
    - apply fold_max_ge, in_map. auto. }
  split; [ | split; auto].
  assert (exists L, In L (layers M)) as [L HL]
    by (destruct (layers M); [contradiction | eexists; left; reflexivity]).
  destruct (Hwf L HL) as [Hu _]. destruct (Hls L HL) as [_ Hr]. specialize (Hr O Hu). lia.
Qed.

(** Under any rule whose weights depend only on the T tokens' scores, and any [step] that is,
    unit by unit, what the max head returns ([step_ok]), the construction computes the net run by
    [step], wherever the shift constants bound the pieces along that run. *)
Theorem construction_under_rule : forall (rl : rule) (step : layer -> nat -> (nat -> R) -> nat -> R)
  (M : maxout) (Rs : shifts) (x : nat -> R),
  rule_ext rl -> step_ok rl (max_rank M) step -> well_formed M ->
  shifts_along (max_rank M) Rs step 0 (input_dim M) (layers M) x ->
  forall o, tf_eval rl (construct M Rs) x o
            = dot (last_width M) (rd_w M o) (run step (layers M) (input_dim M) x) + Q2R (rd_b M o).
Proof.
  intros rl step M Rs x Hext Hstep Hwf Hs o.
  destruct (wf_facts M Hwf) as [HT [HN Hls]].
  set (T := max_rank M) in *. set (N := max_width M) in *. set (d := input_dim M) in *.
  assert (Hd : (d <= N)%nat) by (apply HN; left; reflexivity).
  set (nL := last_width M). set (hL := run step (layers M) d x).
  assert (HnL : (nL <= N)%nat) by (apply HN, last_in; discriminate).
  assert (HX := layers_correct_along rl T N Rs step Hext HT Hstep (layers M) 0 d x (embed (construct M Rs) x) Hd Hls Hs
                  (embed_correct M Rs x Hd)).
  change (last (d :: map units (layers M)) 0%nat) with nL in HX.
  unfold tf_eval. cbn [tokens width blocks out_token ro_w ro_b construct]. fold T N d nL hL.
  f_equal. unfold dot.
  rewrite (rsum_ext _ _ (fun c => if ((1 + T <=? c) && (c <? 1 + T + nL))%nat
                                 then Q2R (rd_w M o (c - (1 + T))%nat) * hL (c - (1 + T))%nat else 0)).
  - pose proof (rsum_window (1 + T) nL (lwidth T N) (fun c => Q2R (rd_w M o c) * hL c)) as W.
    cbv beta in W. rewrite W by (unfold lwidth; lia). reflexivity.
  - intros c Hc. unfold in_h. destruct ((1 + T <=? c) && (c <? 1 + T + nL))%nat eqn:E.
    + apply andb_prop in E. destruct E as [E1 E2]. apply Nat.leb_le in E1. apply Nat.ltb_lt in E2.
      rewrite (HX O c) by auto. f_equal. unfold cstate, zeroext. nat_cases. reflexivity.
    + rewrite Q2R0. ring.
Qed.

Theorem C3_construction_computes_maxout : forall (M : maxout) (Rs : shifts) (x : nat -> R),
  well_formed M -> shifts_bound M Rs x ->
  forall o, tf_eval hardmax (construct M Rs) x o = maxout_eval M x o.
Proof.
  intros M Rs x Hwf Hs o. destruct (wf_facts M Hwf) as [HT _].
  unfold maxout_eval. rewrite <- run_layer_eval. apply construction_under_rule; auto.
  - apply hardmax_rule_ext.
  - apply layer_eval_step_ok; auto.
  - apply shifts_hold_along; auto.
Qed.

(** The claim on a box B_0 = [lower, upper]: wherever the shift constants bound the pieces on
    the box (what `exactform compile` establishes by exact interval arithmetic), Tf = M on B_0. *)
Corollary C3_on_box : forall (M : maxout) (Rs : shifts) (lower upper : nat -> R),
  well_formed M ->
  (forall x, (forall i, (i < input_dim M)%nat -> lower i <= x i <= upper i) -> shifts_bound M Rs x) ->
  forall x, (forall i, (i < input_dim M)%nat -> lower i <= x i <= upper i) ->
  forall o, tf_eval hardmax (construct M Rs) x o = maxout_eval M x o.
Proof. intros. apply C3_construction_computes_maxout; auto. Qed.
